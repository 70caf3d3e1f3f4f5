//! `dhp dashboard --metrics`: the requests it served, refused (foreign
//! Origin) and turned away (no token), its store polls and the events it
//! sent, counted exactly.
use crate::dashboard_support::*;
use crate::metrics_support::{free_port, http_get};
use std::time::{Duration, Instant};

fn sample(text: &str, key: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(key).and_then(|v| v.trim().parse().ok()))
        .unwrap_or_else(|| panic!("{key} missing:\n{text}"))
}

#[test]
fn dashboard_metrics_count_requests_polls_and_events() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 4);
    let maddr = format!("127.0.0.1:{}", free_port());
    let d = Dash::start(dir.path(), &["--metrics", &maddr]);
    for _ in 0..3 {
        assert_eq!(d.get("/api/summary").status, 200);
    }
    assert_eq!(d.request("GET", "/api/summary", &[], "").status, 401);
    let foreign = [("Authorization", &*format!("Bearer {TOKEN}")), ("Origin", "http://evil.example")];
    assert_eq!(d.request("GET", "/api/summary", &foreign, "").status, 403);
    assert_eq!(d.request("GET", "/api/summary", &foreign, "").status, 403);
    // the poller runs every 0.1 s: some polls, each timed
    let end = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let (code, text) = http_get(&maddr, "/metrics").unwrap();
        assert_eq!(code, 200);
        if sample(&text, "dhp_dashboard_polls_total") >= 3.0 || Instant::now() > end {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(sample(&text, r#"dhp_dashboard_requests_total{result="ok"}"#), 3.0, "{text}");
    assert_eq!(sample(&text, r#"dhp_dashboard_requests_total{result="unauthorized"}"#), 1.0, "{text}");
    assert_eq!(sample(&text, r#"dhp_dashboard_requests_total{result="refused"}"#), 2.0, "{text}");
    let polls = sample(&text, "dhp_dashboard_polls_total");
    assert!(polls >= 3.0, "{text}");
    assert!(sample(&text, "dhp_dashboard_poll_seconds_count") >= polls, "{text}");
    // only the dashboard's family: it runs no supervisor or worker
    assert!(!text.contains("dhp_orphans_total") && !text.contains("dhp_checkpoints_total"), "{text}");
    d.stop();
}
