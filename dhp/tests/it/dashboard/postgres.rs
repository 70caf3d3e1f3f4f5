//! `dhp dashboard` on a PostgreSQL ROOT: the same pages, filters, detail
//! and live deltas as on SQLite, from a session the server keeps read-only
//! (a write is refused by the server, and the store's rows are unchanged).
use crate::common::*;
use crate::dashboard_support::*;
use crate::pg_support;
use dhp_core::store::dashboard_view::View;
use std::path::Path;

fn rows_dump(url: &str) -> Vec<Option<String>> {
    let schema = url.rsplit("schema=").next().unwrap();
    pg_support::sql(
        &pg_support::base_url(),
        &format!(
            "SELECT md5(string_agg(t, '|' ORDER BY t)) FROM (SELECT h::text AS t FROM \"{schema}\".handoffs h \
             UNION ALL SELECT o::text FROM \"{schema}\".ownership o UNION ALL SELECT c::text FROM \"{schema}\".checkpoints c) x"
        ),
    )
}

#[test]
fn postgres_store_pages_live_and_read_only() {
    let url = pg_support::fresh_url("dash");
    let mut hids = Vec::new();
    for range in ["1000,5000,100", "6000,7000,100", "8000,9000,100"] {
        let (code, v, err) = dhp(&["dispatch", &url, "--census", range], &[]);
        assert_eq!(code, 0, "{err}");
        hids.push(v["hid"].as_str().unwrap().to_string());
    }
    let (code, _, err) = dhp(&["work", &url, "--runner", "w1", "claim", &hids[0], "--stop-after", "3"], &[]);
    assert_eq!(code, 3, "{err}");

    let before = rows_dump(&url);
    let d = Dash::start(Path::new(&url), &[]);
    let s = d.json("/api/summary");
    assert_eq!((s["counts"]["running"].as_i64(), s["counts"]["pending"].as_i64()), (Some(1), Some(2)), "{s}");
    let p = d.json("/api/handoffs?status=running");
    assert_eq!(p["rows"].as_array().unwrap().len(), 1, "{p}");
    assert_eq!(p["rows"][0]["hid"], hids[0].as_str());
    assert_eq!(p["rows"][0]["holder"], "w1");
    assert_eq!(p["rows"][0]["checkpoints"], 3);
    let p1 = d.json("/api/handoffs?limit=2");
    let after = p1["next_after"].as_str().expect("a second page").to_string();
    let rest = d.json(&format!("/api/handoffs?limit=2&after={after}"));
    let all: Vec<String> = p1["rows"]
        .as_array()
        .unwrap()
        .iter()
        .chain(rest["rows"].as_array().unwrap())
        .map(|r| r["hid"].as_str().unwrap().to_string())
        .collect();
    assert!(rest["next_after"].is_null());
    let mut want = hids.clone();
    want.sort();
    assert_eq!(all, want, "two pages: every handoff once, in id order");
    let det = d.json(&format!("/api/handoff/{}", hids[0]));
    assert_eq!(det["ownership"]["holder"], "w1");
    assert_eq!(det["checkpoints"].as_array().unwrap().len(), 3);
    assert_eq!(det["envelope"]["handoff_id"], hids[0].as_str());
    let q = &hids[1][..6];
    let found = d.json(&format!("/api/handoffs?q={q}"));
    assert_eq!(found["rows"][0]["hid"], hids[1].as_str());
    assert_eq!(d.json("/api/handoffs?q=w1")["rows"].as_array().unwrap().len(), 1);

    // the dashboard changed nothing; then a change shows up as a delta
    assert_eq!(rows_dump(&url), before, "the dashboard wrote to the store");
    let port = d.port;
    let watcher = std::thread::spawn(move || {
        events_until(port, &[("Authorization", &format!("Bearer {TOKEN}"))], "\"status\":\"completed\"")
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (code, _, err) = dhp(&["work", &url, "--runner", "w2", "claim", &hids[1]], &[]);
    assert_eq!(code, 0, "{err}");
    let seen = watcher.join().unwrap();
    assert!(seen.contains("event: delta") && seen.contains(&hids[1]), "{seen}");
    let s = d.json("/api/summary");
    assert_eq!(s["counts"]["completed"], 1, "{s}");

    // the session cannot write
    let v = View::open(Path::new(&url)).unwrap();
    let e = v.try_write().expect_err("a read-only session wrote");
    assert!(e.to_string().contains("read-only transaction"), "{e}");
    let (code, _, err) = d.stop();
    assert_eq!(code, 0, "{err}");
}
