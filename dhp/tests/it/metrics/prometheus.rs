//! `--metrics` end to end: a real Prometheus server scrapes a real `dhp
//! supervisor --metrics` and `dhp transport --metrics` every second while
//! the harness orphans a known number of handoffs (two `dhp work`
//! processes SIGKILLed, three claims left to expire) and ships one census
//! over TCP (plus one hello with a wrong token). The values Prometheus
//! stored must be exactly what the harness caused, counted independently:
//! the supervisor's history lines and the transport's log file.
use crate::common::*;
use crate::metrics_support::*;
use dhp_core::{Config, Runner};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const TOKEN: &str = "metrics-test-token";

fn dispatch(root: &str, census: &str) -> String {
    let (code, v, err) = dhp(&["dispatch", root, "--census", census], &[]);
    assert_eq!(code, 0, "{err}");
    v["hid"].as_str().unwrap().to_string()
}

fn spawn(args: &[&str], lease: &str) -> Proc {
    Proc(
        Command::new(dhp_bin())
            .args(args)
            .env("DHP_LEASE_INTERVAL_S", lease)
            .env("DHP_SUPERVISOR_SCAN_S", "0.2")
            .env("DHP_TRANSPORT_TOKEN", TOKEN)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

fn history_orphans(hist: &std::path::Path, reason: &str) -> usize {
    std::fs::read_to_string(hist)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["op"] == "supervise" && v["action"] == "orphaned" && v["reason"] == reason)
        .count()
}

#[test]
fn prometheus_stores_exactly_the_orphans_and_transport_lines_the_harness_caused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let root = store.to_str().unwrap();
    let logs = dir.path().join("logs");
    let hist = dir.path().join("sup.history");

    // The transport server: its port on stdout, its metrics on stderr.
    let mut tp = spawn(&["transport", logs.to_str().unwrap(), "--port", "0", "--metrics", "0"], "10");
    let tp_metrics = metrics_addr(tp.0.stderr.take().unwrap());
    let mut first = String::new();
    BufReader::new(tp.0.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let port: u16 = first
        .trim_start_matches("dhp transport: listening on 127.0.0.1:")
        .split(',')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{first}"));

    let died = [dispatch(root, "7000000,7100000,100"), dispatch(root, "7200000,7300000,100")];
    let expired = [dispatch(root, "1000,2000,100"), dispatch(root, "3000,4000,100"), dispatch(root, "5000,6000,100")];
    let shipped = dispatch(root, "0,1000,100");

    let mut sup = spawn(
        &["supervisor", root, "sup", "300", "--metrics", "127.0.0.1:0", "--history", hist.to_str().unwrap()],
        "10",
    );
    let sup_metrics = metrics_addr(sup.0.stderr.take().unwrap());
    let prom = Prometheus::start(dir.path(), &[("supervisor", &sup_metrics), ("transport", &tp_metrics)]);
    wait_for_passes(&hist, "sup", 2, 30.0);

    // Two worker processes die (SIGKILL): orphaned as worker-died.
    let r = Runner::open(root, "observer", Config::default()).unwrap();
    let mut workers: Vec<Proc> = died
        .iter()
        .enumerate()
        .map(|(i, h)| spawn(&["work", root, "--runner", &format!("wd{i}"), "claim", h, "--pace", "0.02"], "10"))
        .collect();
    dhp_testkit::wait_until(std::time::Duration::from_secs_f64(60.0), "both workers checkpointed", || {
        died.iter().all(|h| r.status(h).unwrap()["checkpoints"].as_i64() >= Some(2))
    });
    for w in &mut workers {
        w.0.kill().unwrap();
        w.0.wait().unwrap();
    }
    // Three claims of this process (no liveness token) run out of lease.
    let short = Config { lease_interval_s: 0.2, lease_max_missed: 2, ..Config::default() };
    let me = Runner::open(root, "we", short).unwrap();
    for h in &expired {
        let ctx = me.claim(h.as_str()).unwrap();
        ctx.checkpoint(&json!({"n": 1})).unwrap();
    }
    dhp_testkit::wait_until(std::time::Duration::from_secs_f64(60.0), "all five orphaned", || {
        died.iter().chain(&expired).all(|h| r.status(h).unwrap()["status"] == "orphaned")
    });
    // The history line of an orphan is written just after its commit.
    dhp_testkit::wait_until(std::time::Duration::from_secs_f64(30.0), "five orphans in the history", || {
        history_orphans(&hist, "worker-died") + history_orphans(&hist, "lease-expired") >= 5
    });
    assert_eq!(history_orphans(&hist, "worker-died"), 2);
    assert_eq!(history_orphans(&hist, "lease-expired"), 3);

    // One census shipped over TCP in sync mode, to completion.
    let ship = Command::new(dhp_bin())
        .args(["work", root, "--runner", "ws", "claim", &shipped])
        .args(["--ship-to", &format!("127.0.0.1:{port}"), "--ship-mode", "sync"])
        .env("DHP_TRANSPORT_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(ship.status.success(), "{}", String::from_utf8_lossy(&ship.stderr));
    assert_eq!(r.status(&shipped).unwrap()["status"], "completed");
    let checkpoints = r.status(&shipped).unwrap()["checkpoints"].as_i64().unwrap();
    assert_eq!(checkpoints, 10);
    let log_lines = std::fs::read_to_string(logs.join(format!("{shipped}.log"))).unwrap().lines().count();
    // One hello with the wrong token.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    writeln!(s, "{}", json!({"handoff_id": shipped, "token": "wrong", "type": "hello"})).unwrap();
    let mut reply = String::new();
    BufReader::new(&s).read_line(&mut reply).unwrap();
    assert!(reply.contains("bad token"), "{reply}");

    // Everything happened before `done`; wait for scrapes after it.
    let done = unix_now();
    prom.wait_scraped_after("dhp_orphans_total", done, 30.0);
    prom.wait_scraped_after("dhp_transport_lines_total", done, 30.0);
    let v = |q: &str| prom.value(q);
    assert_eq!(v(r#"dhp_orphans_total{reason="worker-died"}"#), 2.0);
    assert_eq!(v(r#"dhp_orphans_total{reason="lease-expired"}"#), 3.0);
    assert_eq!(v(r#"dhp_orphans_total{reason="stalled"}"#), 0.0);
    assert_eq!(v(r#"dhp_orphan_detection_seconds_count{reason="worker-died"}"#), 2.0);
    assert_eq!(v(r#"dhp_orphan_detection_seconds_count{reason="lease-expired"}"#), 3.0);
    // Each lease ran out at most a few scan intervals before its orphan.
    let late = v(r#"dhp_orphan_detection_seconds_sum{reason="lease-expired"}"#);
    assert!((0.0..30.0).contains(&late), "{late}");
    assert_eq!(v(r#"dhp_orphan_detection_seconds_bucket{reason="lease-expired",le="+Inf"}"#), 3.0);
    assert_eq!(v("sum(dhp_dlq_total)"), 0.0);
    assert!(v("dhp_scans_total") >= 2.0);
    assert_eq!(v("dhp_scans_total"), v("dhp_scan_duration_seconds_count"));
    // The transport: every line of the log (envelope + checkpoints)
    // appended once, each checkpoint acked, one hello refused.
    assert_eq!(log_lines as i64, checkpoints + 1);
    assert_eq!(v(r#"dhp_transport_lines_total{result="appended"}"#), log_lines as f64);
    assert_eq!(v("dhp_transport_acks_total"), checkpoints as f64);
    assert_eq!(v(r#"dhp_transport_connections_refused_total{reason="hello"}"#), 1.0);
    assert_eq!(v(r#"dhp_transport_lines_total{result="refused"}"#), 1.0);
    assert_eq!(v(r#"dhp_transport_lines_total{result="duplicate"}"#), 0.0);
    assert_eq!(v(r#"dhp_transport_connections_refused_total{reason="busy"}"#), 0.0);
    let syncs = v("dhp_transport_syncs_total");
    assert!(syncs >= 1.0 && syncs <= checkpoints as f64 + 1.0, "{syncs}");
    assert_eq!(v("dhp_transport_sync_seconds_count"), syncs);
    // Each process exposes its own families only.
    assert!(prom.query(r#"dhp_transport_acks_total{job="supervisor"}"#).is_empty());
    assert!(prom.query(r#"dhp_orphans_total{job="transport"}"#).is_empty());
    assert!(term(&mut sup).success());
    assert!(term(&mut tp).success());
}
