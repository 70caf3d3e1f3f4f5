//! The transport server follows no link in its LOGDIR (issue 33 item 6):
//! a planted `<hid>.log` symlink does not get peer lines appended to its
//! target, the hello is refused naming the link, and a regular log of
//! another handoff next to it is served as before; a link among the
//! journal files stops the start with a typed error.
use crate::tcp_support::*;
use dhp_core::transport::net::{self, ServerConfig};
use dhp_core::{Config, TransportKind};
use serde_json::json;
use std::time::Duration;

fn config(logdir: std::path::PathBuf) -> ServerConfig {
    ServerConfig {
        logdir,
        token: TOKEN.into(),
        cfg: Config::default(),
        idle_timeout: Duration::from_secs(60),
        fsync: true,
        tls: None,
    }
}

#[test]
fn a_log_that_is_a_link_is_refused_not_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let logdir = tmp.path().join("logs");
    std::fs::create_dir(&logdir).unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"precious\n").unwrap();
    let (env, hid) = envelope(10, 200);
    std::os::unix::fs::symlink(&victim, logdir.join(format!("{hid}.log"))).unwrap();
    // A dangling link too: creating through it would make its target.
    let (env2, hid2) = envelope(10, 300);
    let made = tmp.path().join("made-by-server");
    std::os::unix::fs::symlink(&made, logdir.join(format!("{hid2}.log"))).unwrap();

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = rt.spawn(net::run(listener, config(logdir.clone()), async move {
        let _ = stop_rx.await;
    }));

    for (env, hid) in [(&env, &hid), (&env2, &hid2)] {
        let mut c = Raw::connect(&addr);
        let r = c.hello(hid, TOKEN);
        assert_eq!(r["ok"], false, "{r}");
        assert!(r["error"].as_str().unwrap().contains("symbolic link"), "{r}");
        // The connection is closed: nothing more is taken.
        c.send_json(&json!({"type": "envelope", "envelope": env}));
        assert!(c.recv().is_none());
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n");
    assert!(!made.exists(), "the server created the target of a dangling link");

    // A regular log beside them is served as before.
    let (env3, hid3) = envelope(10, 400);
    let mut c = Raw::connect(&addr);
    assert_eq!(c.hello(&hid3, TOKEN), json!({"ok": true, "ack_seq": -1}));
    assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env3})), json!({"ok": true}));
    assert_eq!(c.rpc(&cp_frame(0, &json!({"n": 0}))), json!({"ok": true, "seq": 0}));
    drop(c);
    let _ = stop_tx.send(());
    rt.block_on(server).unwrap().unwrap();
    assert!(std::fs::read_to_string(logdir.join(format!("{hid3}.log"))).unwrap().lines().count() == 2);
}

#[test]
fn a_journal_that_is_a_link_stops_the_start() {
    let tmp = tempfile::tempdir().unwrap();
    let logdir = tmp.path().join("logs");
    std::fs::create_dir(&logdir).unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"precious\n").unwrap();
    let link = logdir.join(format!("journal-{:016}.dhpj", 7));
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let e = net::prepare(config(logdir.clone())).unwrap_err();
    assert_eq!(e.transport_kind(), Some(TransportKind::Link), "{e}");
    assert!(e.to_string().contains(&link.display().to_string()), "{e}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was removed or replaced");
}
