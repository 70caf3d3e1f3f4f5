//! Interop: our shipper (`dhp work --ship-to`, sync and async) ships into
//! the reference's `TransportServer` (dhp-protocol 1.3.0, via refctl
//! net-serve). The reference server's logs ingest on both sides into
//! exactly our checkpoint rows, with no duplicate lines (the reference
//! server does not deduplicate, so this also shows our shipper sends each
//! line once), and a new shipper resumes from the reference's ack_seq.
use crate::tcp_support::*;
use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

fn ref_rows(root: &std::path::Path, hid: &str) -> Vec<(i64, String)> {
    let v = refctl_ok(&["checkpoints", root.to_str().unwrap(), hid], &[]);
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["seq"].as_i64().unwrap(), r["state_hash"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn our_shipper_to_reference_server() {
    let tmp = tempfile::tempdir().unwrap();
    let reflogs = tmp.path().join("reflogs");
    let mut server = Command::new(python())
        .arg(refctl_path())
        .args(["net-serve", reflogs.to_str().unwrap(), "--port", "0", "--host", "127.0.0.1", "--token", TOKEN])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(server.stdout.as_mut().unwrap()).read_line(&mut first).unwrap();
    let hello: serde_json::Value = serde_json::from_str(&first).expect("net-serve prints its port");
    let addr = format!("127.0.0.1:{}", hello["port"]);

    let root = tmp.path().join("root");
    for (i, mode) in [["--ship-mode", "sync"], ["--ship-mode", "async"]].iter().enumerate() {
        let hid = census(&root, 2 + i as u64, 5_002, 100); // 50 checkpoints
        let mut args = vec!["--ship-to", addr.as_str()];
        args.extend_from_slice(mode);
        args.extend_from_slice(&["--ship-max-lag", "8"]);
        let (code, out, err) = finish(spawn_work(&root, "w1", &hid, &args, &tok()), Duration::from_secs(60));
        assert_eq!(code, 0, "{mode:?}: {out} {err}");
        let want = store_rows(&root, &hid);
        assert_eq!(want.len(), 50);

        let log = reflogs.join(format!("{hid}.log"));
        // Ours ingests the reference server's log (and it has no duplicates).
        assert_log_matches_store(&log, &root, &hid, &tmp.path().join(format!("ours-fresh-{i}")));
        // The reference ingests it.
        let fresh = tmp.path().join(format!("ref-fresh-{i}"));
        let r = refctl_ok(&["ingest", fresh.to_str().unwrap(), log.to_str().unwrap()], &[]);
        assert_eq!((r["checkpoints_ingested"].as_i64(), r["lines_skipped"].as_i64()), (Some(50), Some(0)), "{mode:?}");
        assert_eq!(ref_rows(&fresh, &hid), want, "{mode:?}");

        // A new shipper learns where the reference server is and goes on.
        let mut sh = TcpShipper::new(
            &addr,
            ShipperOptions {
                token: TOKEN.into(),
                mode: ShipMode::Sync,
                call_timeout: Duration::from_secs(10),
                ..Default::default()
            },
        )
        .unwrap();
        let env =
            dhp_core::Runner::open(&root, "reader", dhp_core::Config::default()).unwrap().envelope_bare(&hid).unwrap();
        sh.ship_envelope(&hid, &env).unwrap();
        assert_eq!(sh.acked_seq(&hid).unwrap(), 49);
        sh.ship_checkpoint(&hid, 50, &cp_line(50, &json!({"extra": true}))).unwrap();
        assert_eq!(sh.acked_seq(&hid).unwrap(), 50);
        sh.close().unwrap();
        assert_eq!(log_seqs(&log), (0..=50).collect::<Vec<_>>());
    }

    signal(server.id(), nix::sys::signal::Signal::SIGTERM);
    let st = wait_timeout(&mut server, Duration::from_secs(10)).expect("net-serve exits on SIGTERM");
    assert!(st.success());
}
