//! `dhp transport` start failures (issue 33 item 18): a missing
//! `--tls-cert` (or key) file is an `IoError` naming it, as docs/cli.md
//! says of every missing file (it was a `TransportError`); a server that
//! cannot bind leaves no journal behind (it left a 4 MiB
//! `journal-*.dhpj`).

use std::process::Command;

fn dhp() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dhp"))
}

fn journals(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("journal-"))
        .collect()
}

#[test]
fn a_missing_tls_file_is_an_io_error() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-cert.pem");
    let key = tmp.path().join("no-such-key.pem");
    let out = dhp()
        .arg("transport")
        .arg(tmp.path().join("logs"))
        .args(["--port", "0", "--tls-cert"])
        .arg(&missing)
        .arg("--tls-key")
        .arg(&key)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(11), "{err}");
    assert!(err.contains("dhp: IoError:") && err.contains(&missing.display().to_string()), "{err}");
}

#[test]
fn a_server_that_cannot_bind_leaves_no_journal() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = dhp().arg("transport").arg(&logs).args(["--host", "127.0.0.1", "--port", &port]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{err}");
    assert!(err.contains("cannot listen on"), "{err}");
    assert_eq!(journals(&logs), Vec::<String>::new(), "a journal was left behind");
    drop(taken);
}
