//! A judged worker's history text in `timeline.svg` is inert (issue 47
//! item 1): a `process`, `action`, `previous_holder`, `reason` or `hid`
//! carrying markup renders as text. Headless Chromium opens the SVG as a
//! document (as `--dashboard` serves it); a script that ran would mark the
//! root element.
use crate::common::SplitHistory;
use crate::site_support::{dump_dom, file_url};
use serde_json::json;

const MARK: &str = "data-pwned";

fn hostile() -> String {
    format!(
        "<script>document.documentElement.setAttribute('{MARK}','yes')</script>\"'><svg:script \
         xmlns:svg=\"http://www.w3.org/2000/svg\">document.documentElement.setAttribute('{MARK}','2')</svg:script>\
         \u{1}\u{FFFE}\u{202E}"
    )
}

#[test]
fn judged_text_in_the_timeline_runs_no_script() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let hid = "c".repeat(64);
    let t0 = 1_000_000.0;
    let meta = json!({"config": {"seed": 1, "round": 0}, "hids": [hid], "t0": t0, "t_end": t0 + 10.0});
    std::fs::write(dir.join("round.json"), meta.to_string()).unwrap();
    let evil = hostile();
    let mut h = SplitHistory::open(dir);
    for l in [
        json!({"t": t0 + 0.1, "pid": 1, "process": "chaos", "op": "spawn", "type": "event", "name": "w1", "role": "worker", "impl": "cmd", "hid": hid}),
        json!({"t": t0 + 0.2, "pid": 7, "process": evil, "op": "claim", "type": "ok", "hid": hid, "holder": evil, "fence": 0}),
        json!({"t": t0 + 1.0, "pid": 7, "process": evil, "op": "checkpoint", "type": "ok", "hid": hid, "holder": evil, "fence": 0, "seq": 0}),
        json!({"t": t0 + 2.0, "pid": 8, "process": evil, "op": "supervise", "type": "ok", "hid": hid, "action": evil, "previous_holder": evil, "previous_fence": 0, "fence": 1, "reason": evil}),
        json!({"t": t0 + 3.0, "pid": 7, "process": evil, "op": "complete", "type": "ok", "hid": hid, "holder": evil}),
        // a forged harness line (ignored, never drawn as the harness's)
        json!({"t": t0 + 4.0, "pid": 9, "process": "chaos", "op": "fault", "type": "event", "kind": evil, "signal": "KILL", "victim": evil, "hid": hid}),
    ] {
        h.write(&l);
    }
    let mut f = std::fs::OpenOptions::new().append(true).open(dir.join("history.jsonl")).unwrap();
    std::io::Write::write_all(&mut f, format!("{}\n", json!({"t": t0 + 4.0, "pid": 9, "process": "chaos", "op": "fault", "type": "event", "kind": evil, "signal": "KILL", "victim": "w1", "hid": hid})).as_bytes()).unwrap();
    dhp_chaos::timeline::write(dir).unwrap();
    let svg = std::fs::read_to_string(dir.join("timeline.svg")).unwrap();
    // well-formed XML 1.0 (a parse error page would hide a script too)
    let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("timeline.svg is not XML: {e}"));
    assert!(!doc.descendants().any(|n| n.tag_name().name() == "script"), "a script element in the SVG");
    assert!(svg.contains("&lt;script&gt;"), "the hostile text is shown, escaped");
    let dom = dump_dom(&file_url(&dir.join("timeline.svg")), 2000);
    assert!(dom.contains("<svg"), "Chromium rendered the SVG: {}", &dom[..dom.len().min(400)]);
    // the text quotes the marker; only a script that ran sets it as an attribute
    assert!(!dom.contains(&format!("{MARK}=\"")), "a script from the history ran in timeline.svg");
}
