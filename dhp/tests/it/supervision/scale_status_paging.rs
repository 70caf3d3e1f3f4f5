//! Issue 21 item 4: `dhp status ROOT --limit N [--after HID]` lists one
//! page of handoffs, in id order, with the `--after` of the next page;
//! the pages together are exactly the full listing. Bad paging flags are
//! usage errors.
use crate::common::*;
use serde_json::Value;

fn ids(v: &Value) -> Vec<String> {
    v["handoffs"].as_array().unwrap().iter().map(|h| h["handoff_id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn pages_cover_the_listing_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    for i in 0..7 {
        let range = format!("{},{},100", 1000 + i * 100, 2000 + i * 100);
        let (code, _, err) = dhp(&["dispatch", root, "--create", "--census", &range], &[]);
        assert_eq!(code, 0, "{err}");
    }
    let (code, all, err) = dhp(&["status", root], &[]);
    assert_eq!(code, 0, "{err}");
    let all = ids(&all);
    assert_eq!(all.len(), 7);
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all, sorted, "listed in id order");

    let mut paged = Vec::new();
    let mut after: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = vec!["status", root, "--limit", "3"];
        if let Some(a) = &after {
            args.extend(["--after", a.as_str()]);
        }
        let (code, page, err) = dhp(&args, &[]);
        assert_eq!(code, 0, "{err}");
        pages += 1;
        let got = ids(&page);
        assert!(got.len() <= 3);
        paged.extend(got);
        match page["next_after"].as_str() {
            Some(n) => after = Some(n.to_string()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(paged, all);

    // An exact fit: the last page says there is no next one.
    let (_, page, _) = dhp(&["status", root, "--limit", "7"], &[]);
    assert_eq!(ids(&page).len(), 7);
    assert!(page["next_after"].is_null(), "{page}");
}

#[test]
fn bad_paging_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, v, err) = dhp(&["dispatch", root, "--create", "--census", "1000,2000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap();
    for args in [
        vec!["status", root, "--limit", "0"],
        vec!["status", root, "--limit", "-1"],
        vec!["status", root, "--after", "not-a-hid"],
        vec!["status", root, hid, "--limit", "2"],
    ] {
        let (code, _, err) = dhp(&args, &[]);
        assert_eq!(code, 2, "{args:?} must be a usage error: {err}");
    }
}
