//! `dhp work --ship-to` that cannot ship claims nothing (issue 33 item 15):
//! an unknown host fails at once, a server that is down is waited for up to
//! `--ship-timeout` with a line on stderr saying so, both before the store
//! is touched; a server that is reached but refuses the handoff gets it
//! released again. Before, `--ship-to nohost:99` was silent for 30 s,
//! exited 10 and left the handoff claimed by a process that was gone.
use crate::cli_support::*;
use crate::common;
use crate::tcp_support;
use std::time::{Duration, Instant};

fn status(root: &std::path::Path, hid: &str) -> String {
    let r = dhp_core::Runner::open(root, "reader", dhp_core::Config::default()).unwrap();
    r.status(hid).unwrap()["status"].as_str().unwrap().to_string()
}

#[test]
fn an_unknown_host_fails_at_once_and_claims_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let before = common::dump(&root);
    let t = Instant::now();
    let w =
        run(&["work", root.to_str().unwrap(), "--runner", "w1", "claim", &hid, "--ship-to", "nohost.invalid:99"], &[]);
    let msg = failed(&w, 10, "TransportError");
    assert!(t.elapsed() < Duration::from_secs(10), "took {:?}", t.elapsed());
    assert!(msg.contains("cannot resolve the transport server nohost.invalid:99"), "{msg}");
    assert_eq!(before, common::dump(&root), "the store changed");
    assert_eq!(status(&root, &hid), "pending");
}

#[test]
fn a_server_that_is_down_is_waited_for_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let t = Instant::now();
    let w = run(
        &["work", root.to_str().unwrap(), "--runner", "w1", "claim", &hid, "--ship-to", &addr, "--ship-timeout", "1"],
        &[],
    );
    assert_eq!(w.code, 10, "{w:?}");
    assert!(t.elapsed() < Duration::from_secs(10), "took {:?}", t.elapsed());
    let lines: Vec<&str> = w.stderr.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("waiting up to 1 s (--ship-timeout) for the transport server at {addr}"))),
        "{w:?}"
    );
    let last = lines.last().unwrap();
    assert!(
        last.starts_with("dhp: TransportError: transport: cannot reach the transport server at")
            && last.contains("nothing claimed"),
        "{w:?}"
    );
    assert_eq!(status(&root, &hid), "pending");
}

#[test]
fn a_refused_first_ship_releases_the_handoff() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let server = tcp_support::Server::start(&dir.path().join("logs"));
    let w = run(
        &[
            "work",
            root.to_str().unwrap(),
            "--runner",
            "w1",
            "claim",
            &hid,
            "--ship-to",
            &server.addr(),
            "--ship-timeout",
            "5",
        ],
        &[("DHP_TRANSPORT_TOKEN", "not-the-token")],
    );
    assert_eq!(w.code, 10, "{w:?}");
    assert!(w.stderr.contains("bad token"), "{w:?}");
    assert_eq!(status(&root, &hid), "pending", "the handoff stayed claimed by a process that is gone");
}
