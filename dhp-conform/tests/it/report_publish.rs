//! Reports people can publish (issue 32 item 5): a failure `--expect` pins
//! is shown as expected in every format with one count; the HTML opens
//! with a summary and the run's metadata, groups assertions by level with
//! their rule and time; JSON events name the implementation; failure
//! messages show values as JSON and name the runner's direct store edits
//! and clock moves.
use crate::common::*;

fn pin_file(dir: &tempfile::TempDir, label: &str, id: &str) -> String {
    let p = dir.path().join("expect.json");
    let v = serde_json::json!({"implementations": {label: {id: {"outcome": "failed", "why": "known: acks anything"}}}});
    std::fs::write(&p, v.to_string()).unwrap();
    p.to_string_lossy().into_owned()
}

fn parse(html: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    roxmltree::Document::parse_with_options(html, opts)
        .unwrap_or_else(|e| panic!("index.html does not parse: {e}\n{html}"))
}

fn by_id<'a>(doc: &'a roxmltree::Document<'a>, id: &str) -> roxmltree::Node<'a, 'a> {
    doc.descendants().find(|n| n.attribute("id") == Some(id)).unwrap_or_else(|| panic!("no #{id}"))
}

fn text(n: roxmltree::Node<'_, '_>) -> String {
    n.descendants().filter(|d| d.is_text()).map(|d| d.text().unwrap_or("")).collect()
}

#[test]
fn a_pinned_failure_is_expected_in_every_report_with_one_count() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = mutant_adapter("ack-before-complete", "");
    let label = "dhp-rs-mutant-ack-before-complete";
    let pins = pin_file(&dir, label, "ack-after-complete");
    let (html, badges, junit) = (dir.path().join("html"), dir.path().join("badges"), dir.path().join("j.xml"));
    // one pinned failure and one pass
    let base = ["--impl", &cmd, "complete", "--expect", &pins]; // ack-after-complete, idempotent-complete
    let mut args: Vec<&str> = base.to_vec();
    let (h, b, j) = (html.to_str().unwrap(), badges.to_str().unwrap(), junit.to_str().unwrap());
    args.extend(["--html", h, "--badge", b, "--junit", j, "--format", "json"]);
    let run = conform(&args);
    assert_eq!(run.code, 0, "a pinned failure keeps the run green:\n{}\n{}", run.stdout, run.stderr);
    let s = run.summary();
    assert_eq!(
        (s["passed"].as_u64(), s["failed"].as_u64(), s["expected"].as_u64()),
        (Some(1), Some(0), Some(1)),
        "{s}"
    );
    let tally = s["tally"].as_str().unwrap().to_string();
    assert_eq!(tally, "1/2 passed, 1 expected");

    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    let doc = parse(&page);
    let cells: Vec<_> = by_id(&doc, "matrix").descendants().filter(|n| n.has_tag_name("td")).collect();
    assert!(cells.iter().any(|c| c.attribute("class") == Some("expected")), "{page}");
    assert!(!cells.iter().any(|c| c.attribute("class") == Some("failed")), "a pinned failure shown red:\n{page}");
    assert!(text(by_id(&doc, "totals")).contains(&tally), "{page}");
    assert!(page.contains("Pinned by <code>--expect</code>: known: acks anything"), "{page}");

    let badge: serde_json::Value =
        serde_json::from_slice(&std::fs::read(badges.join(format!("{label}.json"))).unwrap()).unwrap();
    assert_eq!(badge["message"], tally.as_str(), "{badge}");
    assert_eq!(badge["color"], "yellowgreen", "{badge}");

    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("failures=\"0\""), "{xml}");
    assert!(xml.contains("<skipped message=\"expected failed (--expect: known: acks anything)"), "{xml}");

    let mut md: Vec<&str> = base.to_vec();
    md.extend(["--format", "markdown"]);
    let run = conform(&md);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // the implementation's name is judged text: <code> with entities, never a code span
    assert!(run.stdout.contains(&format!("| <code>{label}</code> | {tally} |")), "{}", run.stdout);
    assert!(run.stdout.contains("☑️ expected fail"), "{}", run.stdout);
    assert!(!run.stdout.contains("❌"), "a pinned failure shown red:\n{}", run.stdout);
    assert!(run.stdout.contains("### Expected failures (`--expect`)"), "{}", run.stdout);
}

#[test]
fn the_html_opens_with_a_summary_and_metadata_and_groups_by_level() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("html");
    // leader-election (core) and leader-renews-term (extended)
    let run = conform(&["--impl", "ours", "leader", "--html", html.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    let doc = parse(&page);
    let body = doc.descendants().find(|n| n.has_tag_name("body")).unwrap();
    let first: Vec<_> = body.children().filter(|n| n.is_element()).take(4).collect();
    let ids: Vec<_> = first.iter().map(|n| n.attribute("id").unwrap_or(n.tag_name().name())).collect();
    assert_eq!(ids, ["h1", "summary", "totals", "meta"], "{page}");
    assert!(text(first[1]).starts_with("2 passed, 0 failed, 0 errored, 0 skipped in "), "{page}");
    let meta = text(by_id(&doc, "meta"));
    let date = meta.split("date").nth(1).unwrap_or("");
    assert!(date.len() >= 20 && date.as_bytes()[4] == b'-' && date[..20].ends_with('Z'), "date: {meta}");
    assert!(meta.contains("command") && meta.contains("--html"), "{meta}");
    let commit = meta.split("dhp-conform commit").nth(1).unwrap_or("");
    assert!(commit.len() >= 40 && commit[..40].chars().all(|c| c.is_ascii_hexdigit()), "commit: {meta}");
    assert!(meta.contains("duration"), "{meta}");
    let matrix = by_id(&doc, "matrix");
    let core = by_id(&doc, "level-core");
    let ext = by_id(&doc, "level-extended");
    assert!(text(core).starts_with("core level — 1/1 passed"), "{page}");
    let rows: Vec<_> = matrix.descendants().filter(|n| n.has_tag_name("tr")).collect();
    let pos = |n: roxmltree::Node<'_, '_>| rows.iter().position(|r| *r == n).unwrap();
    let election = rows.iter().position(|r| text(*r).starts_with("leader-election")).unwrap();
    let renews = rows.iter().position(|r| text(*r).starts_with("leader-renews-term")).unwrap();
    assert!(pos(core) < election && election < pos(ext) && pos(ext) < renews, "{page}");
    assert!(text(rows[election]).contains("one leader among supervisor processes"), "rule text: {page}");
    let times: Vec<_> = matrix.descendants().filter(|n| n.attribute("class") == Some("time")).collect();
    assert_eq!(times.len(), 2, "{page}");
    assert!(text(times[0]).ends_with(" s"), "{page}");
}

#[test]
fn json_events_name_the_implementation() {
    let run = conform(&["--impl", "ours", "fencing", "--exact", "--format", "json"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let events: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "result")
        .collect();
    assert_eq!(events.len(), 1, "{}", run.stdout);
    assert_eq!(events[0]["implementation"], "ours", "{}", events[0]);
    assert_eq!(events[0]["assertion"], "fencing");
    assert_eq!(events[0]["outcome"], "passed");
}

#[test]
fn failure_messages_show_json_and_name_store_edits_and_clock_moves() {
    let run = conform(&["--impl", &mutant_adapter("no-stall-detection", ""), "stall-by-age", "--format", "json"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let (o, m) = run.outcomes().into_iter().find(|((_, a), _)| a == "stall-by-age").unwrap().1;
    assert_eq!(o, "failed");
    assert!(m.contains("got null, want \"orphaned\""), "values as JSON, not Debug: {m}");
    assert!(!m.contains("Some(") && !m.contains("None"), "{m}");
    assert!(
        m.contains("[the runner edited the store directly in this assertion: UPDATE progress SET last_checkpoint_at = $1 WHERE hid = $2 ["),
        "{m}"
    );

    let run = conform(&["--impl", &mutant_adapter("clock-offset-ignored", ""), "budget-kinds", "--format", "json"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let (_, m) = run.outcomes().into_iter().find(|((_, a), _)| a == "budget-kinds").unwrap().1;
    assert!(
        m.contains("[clock-control: the runner moved the implementation's clock on by 0.800 s in this assertion"),
        "{m}"
    );
}
