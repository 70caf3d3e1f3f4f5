//! The demo's verdicts on what it observed, kept apart from the driver so
//! they are unit-tested against bad runs too.

use crate::record::PageRecord;
use crate::titles;
use std::collections::BTreeMap;

/// Rows in title order, pages before the kill by worker-A (attempt 1),
/// the rest by worker-B (attempt 2).
pub fn check_records(records: &[PageRecord], titles: &[String], kill_at: usize) -> Vec<String> {
    let mut bad = Vec::new();
    if records.len() != titles.len() {
        bad.push(format!("dataset has {} rows for {} titles", records.len(), titles.len()));
    }
    for (i, (r, t)) in records.iter().zip(titles).enumerate() {
        let (who, attempt) = if i < kill_at { ("worker-A", 1) } else { ("worker-B", 2) };
        if r.index != i as u64 || &r.title != t {
            bad.push(format!("row {i} is page {} {:?}, expected {t:?}", r.index, r.title));
        }
        if r.fetched_by != who || r.attempt != attempt {
            bad.push(format!(
                "page {} was fetched by {} attempt {}, expected {who} attempt {attempt}",
                i + 1,
                r.fetched_by,
                r.attempt
            ));
        }
        if r.sha256.len() != 64 || r.http_status != 200 || !r.url.ends_with(&titles::encode_title(t)) {
            bad.push(format!("page {} has a malformed record", i + 1));
        }
    }
    bad
}

/// Summarize the mirror's per-page request counts; pages before the kill
/// must have exactly 1, the page killed mid-fetch exactly 2 (the killed
/// request and worker-B's), the rest exactly 1.
pub fn describe_counts(
    counts: &BTreeMap<String, u64>,
    titles: &[String],
    kill_at: usize,
) -> (Vec<String>, Vec<String>) {
    let c: Vec<u64> = titles.iter().map(|t| counts.get(t).copied().unwrap_or(0)).collect();
    let mut bad = Vec::new();
    let range = |lo: usize, hi: usize| -> String {
        let seg = &c[lo..hi];
        let uniform = seg.iter().all(|&x| x == seg[0]);
        let sum: u64 = seg.iter().sum();
        if hi == lo + 1 {
            format!("page {}: {sum} requests", lo + 1)
        } else if uniform {
            format!("pages {}–{}: {} each ({sum} requests)", lo + 1, hi, seg[0])
        } else {
            format!("pages {}–{}: {seg:?} ({sum} requests)", lo + 1, hi)
        }
    };
    for (i, &n) in c.iter().enumerate() {
        let want = if i == kill_at { 2 } else { 1 };
        if n != want {
            bad.push(format!("mirror served page {} ({}) {n} times, expected {want}", i + 1, titles[i]));
        }
    }
    let mut lines = vec![format!("mirror requests: {}", range(0, kill_at))];
    lines.push(format!(
        "                 page {}: {} (worker-A's, killed in flight and never answered; then worker-B's)",
        kill_at + 1,
        c[kill_at]
    ));
    if kill_at + 1 < c.len() {
        lines.push(format!("                 {}", range(kill_at + 1, c.len())));
    }
    let total: u64 = c.iter().sum();
    lines.push(format!(
        "                 total {total} requests for {} pages — pages 1–{kill_at} fetched exactly once in all: {}",
        c.len(),
        if c[..kill_at].iter().all(|&x| x == 1) { "yes" } else { "NO" }
    ));
    (lines, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: usize, t: &str, by: &str, attempt: u64) -> PageRecord {
        PageRecord {
            index: i as u64,
            title: t.into(),
            url: format!("http://x/api/rest_v1/page/summary/{}", titles::encode_title(t)),
            bytes: 10,
            sha256: "a".repeat(64),
            fetched_by: by.into(),
            host: by[by.len() - 1..].into(),
            attempt,
            pid: 1,
            http_status: 200,
            elapsed_ms: 1,
            fetched_at: String::new(),
        }
    }

    #[test]
    fn counts_flag_refetches_and_missing_pages() {
        let t: Vec<String> = ["P1", "P2", "P3", "P4"].iter().map(|s| s.to_string()).collect();
        let mk = |v: &[u64]| t.iter().cloned().zip(v.iter().copied()).collect::<BTreeMap<_, _>>();
        let (lines, bad) = describe_counts(&mk(&[1, 1, 2, 1]), &t, 2);
        assert!(bad.is_empty(), "{bad:?}");
        assert!(lines.last().unwrap().ends_with("yes"));
        let (lines, bad) = describe_counts(&mk(&[2, 1, 2, 1]), &t, 2);
        assert_eq!(bad.len(), 1, "a page before the kill fetched twice is flagged");
        assert!(lines.last().unwrap().ends_with("NO"));
        let (_, bad) = describe_counts(&mk(&[1, 1, 1, 1]), &t, 2);
        assert_eq!(bad.len(), 1, "the killed page must have been requested twice (killed + resumed)");
        let (_, bad) = describe_counts(&mk(&[1, 1, 2, 0]), &t, 2);
        assert_eq!(bad.len(), 1, "a page never fetched is flagged");
    }

    #[test]
    fn records_must_match_titles_and_workers() {
        let t: Vec<String> = ["P1", "P2", "P3"].iter().map(|s| s.to_string()).collect();
        let good = vec![rec(0, "P1", "worker-A", 1), rec(1, "P2", "worker-B", 2), rec(2, "P3", "worker-B", 2)];
        assert!(check_records(&good, &t, 1).is_empty());
        let mut wrong_worker = good.clone();
        wrong_worker[0].fetched_by = "worker-B".into();
        assert_eq!(check_records(&wrong_worker, &t, 1).len(), 1);
        let mut swapped = good.clone();
        swapped.swap(1, 2);
        assert!(!check_records(&swapped, &t, 1).is_empty());
        assert!(!check_records(&good[..2], &t, 1).is_empty(), "a missing row is flagged");
        let mut bad_hash = good.clone();
        bad_hash[2].sha256 = "zz".into();
        assert_eq!(check_records(&bad_hash, &t, 1).len(), 1);
    }
}
