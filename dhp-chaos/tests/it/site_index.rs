//! The run's report site: a real two-round run writes `index.html`, which
//! links every round and shows every invariant's verdict (the run's and
//! each round's, as results.json says); rendered by headless Chromium, the
//! DOM has the verdict rows and the plots, their p50/p99 markers at the
//! values results.json saved, the kills and checkpoints the round's files
//! hold. `analyze` writes the same page again from the saved files and
//! prints the run's verdict line with its exit code. Each check is run on
//! a broken page too, and must fail there.
use crate::common::*;
use crate::site_support::*;
use serde_json::Value;
use std::path::Path;

/// Everything the page must show for `results` (of the run in `out`), checked on the rendered DOM.
fn check_page(dom: &str, out: &Path, results: &Value, said: &str) -> Result<(), String> {
    let verdict = text_of(dom, "verdict").ok_or("no verdict line")?;
    // the run's own last line: ALL INVARIANTS HELD, or NO VIOLATION … when
    // a coverage target was missed (allowed here: --allow-uncovered all)
    let held = verdict.contains("ALL INVARIANTS HELD") || verdict.starts_with("dhp-chaos: NO VIOLATION");
    if !held || verdict.trim() != said {
        return Err(format!("verdict line: {verdict} (the run said {said})"));
    }
    let rounds = results["rounds"].as_array().ok_or("results.json has no rounds")?;
    if rounds.is_empty() {
        return Err("no rounds".into());
    }
    let links: Vec<&str> =
        tags_with(dom, &["class=\"round-link\""]).into_iter().filter_map(|t| attr(t, "href")).collect();
    // every invariant of the run, with its status and sources
    for (name, v) in results["totals"]["invariants"].as_object().ok_or("no invariants in results.json")? {
        let status = v["status"].as_str().unwrap_or("");
        let row = tags_with(dom, &[&format!("data-invariant=\"{name}\""), &format!("data-status=\"{status}\"")]);
        if row.is_empty() {
            return Err(format!("the page has no row for {name} with status {status}"));
        }
    }
    for r in rounds {
        let dir = Path::new(r["dir"].as_str().ok_or("a round without dir")?);
        let rel = dir.strip_prefix(out).map_err(|_| format!("{} is not in {}", dir.display(), out.display()))?;
        let rel = rel.to_string_lossy().into_owned();
        if !links.contains(&format!("{rel}/").as_str()) {
            return Err(format!("no link to {rel}/ among {links:?}"));
        }
        let sec = section(dom, &rel).ok_or(format!("no section for {rel}"))?;
        for i in r["invariants"].as_array().ok_or("round without invariants")? {
            let (name, status) = (i["name"].as_str().unwrap_or(""), i["status"].as_str().unwrap_or(""));
            if tags_with(sec, &[&format!("data-invariant=\"{name}\""), &format!("data-status=\"{status}\"")]).is_empty()
            {
                return Err(format!("{rel}: no verdict row for {name} ({status})"));
            }
        }
        // the latency plot and its markers, at the saved values
        let wk = &r["latencies"]["worker_kill"];
        let plot = tags_with(sec, &["class=\"plot latency\""]);
        let plot = plot.first().ok_or(format!("{rel}: no latency plot"))?;
        for p in ["p50", "p99"] {
            let saved = format!("{:.3}", wk[p].as_f64().ok_or(format!("{rel}: no {p} saved"))? * 1000.0);
            if attr(plot, &format!("data-{p}-ms")) != Some(saved.as_str()) {
                return Err(format!(
                    "{rel}: latency plot {p} is {:?}, results.json says {saved}",
                    attr(plot, &format!("data-{p}-ms"))
                ));
            }
            let marker = tags_with(sec, &[&format!("class=\"marker {p}\"")]);
            if marker.first().and_then(|m| attr(m, "data-ms")) != Some(saved.as_str()) {
                return Err(format!("{rel}: no {p} marker at {saved} ms"));
            }
        }
        let samples = tags_with(sec, &["class=\"sample\""]).len() as u64;
        if Some(samples) != wk["n"].as_u64() {
            return Err(format!("{rel}: {samples} latency samples drawn, results.json has {}", wk["n"]));
        }
        // faults and kills over time: every SIGKILL the checker counted
        let f = tags_with(sec, &["class=\"plot faults\""]);
        let f = f.first().ok_or(format!("{rel}: no faults plot"))?;
        if attr(f, "data-kills").and_then(|k| k.parse::<u64>().ok()) != r["kills"].as_u64() {
            return Err(format!(
                "{rel}: faults plot has {:?} kills, results.json {}",
                attr(f, "data-kills"),
                r["kills"]
            ));
        }
        let by_kind: u64 = r["faults_by_kind"].as_object().map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
        if attr(f, "data-faults").and_then(|k| k.parse::<u64>().ok()) != Some(by_kind) {
            return Err(format!(
                "{rel}: faults plot has {:?} faults, faults_by_kind sums to {by_kind}",
                attr(f, "data-faults")
            ));
        }
        // the checkpoint rate: one per acknowledged checkpoint of the round's history, all in its bins
        let acked = std::fs::read_to_string(dir.join("history.jsonl"))
            .map_err(|e| e.to_string())?
            .lines()
            .filter(|l| l.contains("\"op\":\"checkpoint\"") && l.contains("\"type\":\"ok\""))
            .count() as u64;
        let c = tags_with(sec, &["class=\"plot checkpoints\""]);
        let c = c.first().ok_or(format!("{rel}: no checkpoint plot"))?;
        let binned: u64 =
            tags_with(sec, &["class=\"bin\""]).iter().filter_map(|b| attr(b, "data-count")?.parse::<u64>().ok()).sum();
        if attr(c, "data-checkpoints").and_then(|k| k.parse::<u64>().ok()) != Some(acked) || binned != acked {
            return Err(format!(
                "{rel}: checkpoint plot {:?} / bins {binned}, history has {acked}",
                attr(c, "data-checkpoints")
            ));
        }
        // rework per faulted worker, summing to what the report saved
        let w = tags_with(sec, &["class=\"plot rework\""]);
        let w = w.first().ok_or(format!("{rel}: no rework plot"))?;
        if attr(w, "data-total").and_then(|k| k.parse::<u64>().ok()) != r["rework_total_chunks"].as_u64()
            || attr(w, "data-max").and_then(|k| k.parse::<u64>().ok()) != r["rework_max_chunks"].as_u64()
        {
            return Err(format!(
                "{rel}: rework plot {w} against results.json {} / {}",
                r["rework_total_chunks"], r["rework_max_chunks"]
            ));
        }
        if tags_with(sec, &["class=\"timeline\"", &format!("data=\"{rel}/timeline.svg\"")]).is_empty() {
            return Err(format!("{rel}: the timeline is not on the page"));
        }
    }
    Ok(())
}

#[test]
fn the_run_page_links_every_round_and_shows_what_results_json_says() {
    let r = run_chaos(
        "site-index",
        &["--allow-uncovered", "all", "--rounds", "2", "--seed", "4343", "--handoffs", "3", "--chunks", "100"],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    let index = r.out.join("index.html");
    let page = std::fs::read_to_string(&index).expect("the run wrote index.html");
    assert!(r.stdout.contains(&format!("report: {}", index.display())), "{}", r.dump());
    // offline: no script, stylesheet or image from anywhere but the run directory
    for bad in ["src=\"http", "href=\"http", "data=\"http", "url(", "@import", "<script", "<link"] {
        assert!(!page.contains(bad), "the static page has {bad}");
    }
    let rounds = r.results["rounds"].as_array().expect("rounds").len();
    assert_eq!(rounds, 2);
    for w in r.results["rounds"].as_array().unwrap() {
        assert!(w["latencies"]["worker_kill"]["n"].as_u64().unwrap_or(0) > 0, "no kill latency measured: {}", r.dump());
    }

    let said = r.stdout.lines().last().unwrap_or("");
    let dom = dump_dom(&file_url(&index), 1000);
    check_page(&dom, &r.out, &r.results, said).unwrap_or_else(|e| panic!("{e}\n--- rendered DOM\n{dom}"));
    let png = keep_dir().join("site_index.png");
    screenshot(&file_url(&index), &png, &[]);
    println!("screenshot of the run page: {}", png.display());

    // the checks fail on a broken page: a round without its link, a p50 moved, an invariant row gone
    let broken = dom.replacen("href=\"round-0001/\"", "href=\"elsewhere/\"", 1);
    assert!(check_page(&broken, &r.out, &r.results, said).is_err(), "a missing round link went unnoticed");
    let p50 = format!("{:.3}", r.results["rounds"][0]["latencies"]["worker_kill"]["p50"].as_f64().unwrap() * 1000.0);
    let broken = dom.replacen(&format!("data-p50-ms=\"{p50}\""), "data-p50-ms=\"0.001\"", 1);
    assert!(check_page(&broken, &r.out, &r.results, said).is_err(), "a wrong p50 went unnoticed");
    let broken = dom.replace("data-invariant=\"fencing\"", "data-invariant=\"gone\"");
    assert!(check_page(&broken, &r.out, &r.results, said).is_err(), "a missing verdict row went unnoticed");
    let broken = dom.replacen("class=\"marker p99\"", "class=\"marker\"", 1);
    assert!(check_page(&broken, &r.out, &r.results, said).is_err(), "a missing p99 marker went unnoticed");

    // analyze writes the same page from the saved files, and the run's verdict line and exit code
    std::fs::remove_file(&index).unwrap();
    let (code, out) = analyze(&r.out);
    assert_eq!(code, r.code, "{out}");
    assert_eq!(out.lines().last(), Some(said), "{out}");
    assert_eq!(std::fs::read_to_string(&index).expect("analyze wrote index.html"), page, "analyze's page differs");
}
