//! `GET /api/handoffs` pages a store of 3,000 handoffs by keyset (`after`
//! = the last id of the previous page): the pages together are every
//! handoff exactly once, in id order, with or without a status filter; an
//! id prefix and a holder search find exactly their handoffs; the DLQ
//! (`status=failed`) carries each entry's reason; bad parameters are 400.
use crate::dashboard_support::*;
use serde_json::Value;

fn ids(page: &Value) -> Vec<String> {
    page["rows"].as_array().unwrap().iter().map(|r| r["hid"].as_str().unwrap().to_string()).collect()
}

/// Every page of `query` (limit `limit`), concatenated; and the page count.
fn all_pages(d: &Dash, query: &str, limit: usize) -> (Vec<Value>, usize) {
    let (mut rows, mut after, mut pages) = (Vec::new(), String::new(), 0);
    loop {
        let page = d.json(&format!("/api/handoffs?limit={limit}&after={after}{query}"));
        pages += 1;
        let got = page["rows"].as_array().unwrap().clone();
        assert!(got.len() <= limit, "a page of {} rows (limit {limit})", got.len());
        rows.extend(got);
        match page["next_after"].as_str() {
            Some(n) => {
                assert_eq!(Some(n), rows.last().and_then(|r| r["hid"].as_str()), "next_after is the page's last id");
                after = n.to_string();
            }
            None => return (rows, pages),
        }
        assert!(pages < 1000, "paging does not end");
    }
}

#[test]
fn keyset_pages_filters_and_search() {
    let dir = tempfile::tempdir().unwrap();
    let by = fill(dir.path(), 3000);
    let mut every: Vec<String> = by.values().flatten().cloned().collect();
    every.sort();
    let d = Dash::start(dir.path(), &[]);

    let (rows, pages) = all_pages(&d, "", 500);
    let got: Vec<String> = rows.iter().map(|r| r["hid"].as_str().unwrap().to_string()).collect();
    assert_eq!(got, every, "the pages are every handoff once, in id order");
    assert_eq!(pages, 6, "3000 rows in pages of 500: the sixth says it is the last");

    for status in ["running", "pending", "failed"] {
        let (rows, _) = all_pages(&d, &format!("&status={status}"), 97);
        let got: Vec<String> = rows.iter().map(|r| r["hid"].as_str().unwrap().to_string()).collect();
        assert_eq!(got, by[status], "{status}: exactly its handoffs, in order");
        assert!(rows.iter().all(|r| r["status"] == status));
    }
    // the DLQ shows why each entry is there
    let dlq = d.json("/api/handoffs?status=failed&limit=5");
    for r in dlq["rows"].as_array().unwrap() {
        assert!(r["error"].as_str().unwrap().starts_with("reason-"), "{r}");
    }
    // counts by status
    let s = d.json("/api/summary");
    assert_eq!(s["total"], 3000);
    assert_eq!(s["counts"]["running"], 1000);
    assert_eq!(s["counts"]["failed"], 1000);

    // an id prefix, with and without a status
    let prefix = &every[1234][..3];
    let want: Vec<&String> = every.iter().filter(|h| h.starts_with(prefix)).collect();
    let (rows, _) = all_pages(&d, &format!("&q={prefix}"), 2);
    assert_eq!(rows.len(), want.len(), "prefix {prefix}");
    let got: Vec<String> = rows.iter().map(|r| r["hid"].as_str().unwrap().to_string()).collect();
    assert_eq!(got.iter().collect::<Vec<_>>(), want);
    let (rows, _) = all_pages(&d, &format!("&q={}&status=pending", prefix.to_uppercase()), 50);
    let want: Vec<&String> = by["pending"].iter().filter(|h| h.starts_with(prefix)).collect();
    assert_eq!(rows.iter().map(|r| r["hid"].as_str().unwrap()).collect::<Vec<_>>(), want);
    // a holder: its running handoffs (w-1 holds i % 4 == 1 among the running)
    let (rows, _) = all_pages(&d, "&q=w-1", 100);
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["holder"] == "w-1" && r["status"] == "running"));
    assert_eq!(rows.len(), 250, "i % 3 == 0 and i % 4 == 1 for i < 3000");

    // one handoff's detail
    let hid = &by["running"][7];
    let det = d.json(&format!("/api/handoff/{hid}"));
    assert_eq!(det["row"]["hid"], hid.as_str());
    assert_eq!(det["ownership"]["holder"], det["row"]["holder"]);
    assert_eq!(det["envelope"]["handoff_id"], hid.as_str());
    assert_eq!(d.get(&format!("/api/handoff/{}", "0".repeat(64))).status, 404);

    for bad in [
        "/api/handoffs?limit=0",
        "/api/handoffs?limit=501",
        "/api/handoffs?limit=x",
        "/api/handoffs?status=bogus",
        "/api/handoffs?after=zz",
        "/api/handoffs?after=%ff",
        "/api/handoff/not-a-hid",
    ] {
        assert_eq!(d.get(bad).status, 400, "{bad}");
    }
    let _ = ids;
}
