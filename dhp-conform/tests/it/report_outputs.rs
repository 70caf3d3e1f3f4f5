//! The reports people publish, from one real run with a failure: the HTML
//! report parses and shows the failure with the adapter's stderr, the
//! badge and the Markdown report say the same.
use crate::common::*;

#[test]
fn html_badge_and_markdown_of_a_failing_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_string_lossy().into_owned();
    // a mutant that breaks exactly one rule, logging its requests on stderr
    let cmd = mutant_adapter("ack-before-complete", "--log-requests");
    let run = conform(&[
        "--impl",
        &cmd,
        "ack-after-complete",
        "--exact",
        "--html",
        &d,
        "--badge",
        &d,
        "--format",
        "markdown",
    ]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);

    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    // strict XML parsing; the only allowance is HTML5's `<!DOCTYPE html>`
    let opts = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    let doc = roxmltree::Document::parse_with_options(&html, opts)
        .unwrap_or_else(|e| panic!("index.html does not parse: {e}\n{html}"));
    let table = doc.descendants().find(|n| n.attribute("id") == Some("matrix")).expect("the matrix");
    let headers: Vec<String> =
        table.descendants().filter(|n| n.has_tag_name("th")).filter_map(|n| n.text().map(String::from)).collect();
    assert!(headers.iter().any(|h| h.starts_with("dhp-rs")), "{headers:?}");
    let row = table
        .descendants()
        .find(|n| n.has_tag_name("tr") && n.descendants().any(|c| c.text() == Some("ack-after-complete")))
        .expect("a row for the assertion");
    let cell = row.children().filter(|n| n.has_tag_name("td")).nth(2).expect("the outcome cell");
    assert_eq!(cell.attribute("class"), Some("failed"));
    let section = doc.descendants().find(|n| n.attribute("class") == Some("failure")).expect("the failure section");
    let text = |class: &str| {
        section
            .descendants()
            .find(|n| n.attribute("class") == Some(class))
            .and_then(|n| n.text())
            .unwrap_or("")
            .to_string()
    };
    assert!(text("message").contains("ack of a pending handoff"), "{html}");
    assert!(text("stderr").contains("dhp-mutant-adapter: ack: ok"), "{html}");

    let badges: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(badges.len(), 1, "{badges:?}");
    let badge: serde_json::Value = serde_json::from_slice(&std::fs::read(badges[0].path()).unwrap()).unwrap();
    assert_eq!(
        badge,
        serde_json::json!({"schemaVersion": 1, "label": "DHP 1.3 conformance", "message": "0/1 passed, 1 failed", "color": "red"})
    );

    assert!(run.stdout.starts_with("## DHP 1.3 conformance\n"), "{}", run.stdout);
    assert!(run.stdout.contains("| `ack-after-complete` | extended | ❌ **FAIL** |"), "{}", run.stdout);
    assert!(run.stdout.contains("### Failures"), "{}", run.stdout);
    // the progress went to stderr, not into the report
    assert!(!run.stdout.contains("running 1 test"), "{}", run.stdout);
}
