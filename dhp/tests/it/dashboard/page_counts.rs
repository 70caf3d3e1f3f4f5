//! A page of handoffs comes with the counts to show beside it, never
//! older than its rows: `GET /api/handoffs` makes the poller catch up with
//! the store (the CI once saw the page show "running 0" beside the one
//! running row, the counts from the poll before the page's read).
use crate::common::*;
use crate::dashboard_support::*;
use serde_json::Value;

fn dispatch(root: &str, range: &str) -> String {
    let (code, v, err) = dhp(&["dispatch", root, "--census", range], &[]);
    assert_eq!(code, 0, "{err}");
    v["hid"].as_str().unwrap().to_string()
}

fn hids(rows: &Value) -> Vec<&str> {
    rows.as_array().unwrap().iter().map(|r| r["hid"].as_str().unwrap()).collect()
}

#[test]
fn a_page_and_its_counts_are_read_together() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let first = dispatch(root, "1000,2000,100");
    // the poller's first look is a minute away: only a page read counts what follows
    let d = Dash::start(dir.path(), &["--poll", "60"]);
    assert_eq!(d.json("/api/summary")["counts"]["pending"], 1);
    let second = dispatch(root, "3000,4000,100");
    assert_eq!(d.json("/api/summary")["counts"]["pending"], 1, "the poller looked already: this test shows nothing");

    let page = d.json("/api/handoffs?status=pending");
    let mut want = vec![first.as_str(), second.as_str()];
    want.sort();
    assert_eq!(hids(&page["rows"]), want);
    assert_eq!(page["summary"]["counts"]["pending"], 2, "the counts beside the page: {page}");
    assert_eq!(page["summary"]["total"], 2);
    assert_eq!(hids(&page["changed"]), vec![second.as_str()], "what the catch-up read");
    assert_eq!(page["truncated"], false);
    // the catch-up counted for every page, and moved the seq on
    let s = d.json("/api/summary");
    assert_eq!(s["counts"]["pending"], 2);
    assert_eq!(s["seq"], page["summary"]["seq"]);
    assert_eq!(s["seq"], 1);
    // nothing new: the next page's catch-up reads nothing and sends nothing
    let again = d.json("/api/handoffs?status=pending");
    assert_eq!(again["changed"], serde_json::json!([]));
    assert_eq!(again["summary"]["seq"], 1);
}
