//! The run's report site: `index.html` in every run directory, linking
//! each round, with the verdict of every invariant (and the sources it
//! rests on), the fault schedule, the timeline and four plots drawn as
//! inline SVG ([`plots`]). It is one static file that needs nothing but
//! the run directory (it works offline, from `file://`). Every number on it
//! comes from the files the run saved: `results.json` for the run (its
//! command, exit code), each round's `round-report.json` for the
//! verdicts and latencies, and its `round.json`, `history.jsonl` and store
//! for the series over time. `dhp-chaos analyze DIR` writes it again from
//! those files; `--dashboard` serves it while the rounds run ([`dashboard`]).

pub mod dashboard;
pub mod guard;
pub(crate) mod plots;

use crate::check::{self, RoundReport, Verdict};
use crate::error::{Error, Result};
use crate::hist;
use crate::report;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The page's file name in the run directory.
pub const INDEX: &str = "index.html";
/// Fault schedule rows shown per round (the rest are in `history.jsonl`).
const SCHEDULE_ROWS: usize = 400;

/// Escape text for HTML and SVG (element content and attribute values).
pub(crate) use dhp_markup::html as esc;

/// Write `DIR/index.html` for the run directory (or single round directory) `dir`; its path.
pub fn write(dir: &Path) -> Result<PathBuf> {
    let page = render(dir, None)?;
    let out = dir.join(INDEX);
    std::fs::write(&out, page).map_err(Error::io("writing", &out))?;
    Ok(out)
}

/// One round directory's saved files, as the page shows them.
struct RoundFiles {
    /// Relative to the run directory, `/`-separated (`round-0000`, `round-0000/h1`).
    rel: String,
    report: RoundReport,
    series: Option<Series>,
}

/// What the round's history (and store) say over time, seconds from the round's start.
struct Series {
    span_s: f64,
    fault_phase: (f64, f64),
    faults: Vec<f64>,
    kills: Vec<f64>,
    checkpoints: Vec<f64>,
    checkpoints_from: &'static str,
    schedule: Vec<[String; 6]>,
}

/// The round directories under `dir` (`dir` itself when it is one),
/// host directories of a `--hosts` round in place of their round.
fn round_dirs(dir: &Path) -> Vec<PathBuf> {
    let is_round = |p: &Path| check::is_round_dir(p) || check::is_pruned_round_dir(p);
    if is_round(dir) {
        return vec![dir.to_path_buf()];
    }
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
    v.sort();
    v.into_iter()
        .flat_map(|p| crate::hosts::host_dirs(&p).unwrap_or_else(|| vec![p]))
        .filter(|p| is_round(p) && p.join("round-report.json").exists())
        .collect()
}

fn rel(base: &Path, p: &Path) -> String {
    let r = p.strip_prefix(base).unwrap_or(p);
    let s = r.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/");
    if s.is_empty() {
        ".".into()
    } else {
        s
    }
}

fn load_round(base: &Path, d: &Path) -> Result<RoundFiles> {
    let report = check::load_saved_report(d)?;
    let series = if check::is_round_dir(d) { Some(series(d)?) } else { None };
    Ok(RoundFiles { rel: rel(base, d), report, series })
}

fn series(d: &Path) -> Result<Series> {
    let meta = check::read_meta(&d.join("round.json"))?;
    let mut h = hist::load(&d.join("history.jsonl"))?;
    if meta["config"]["impl_history"].as_bool() == Some(false) {
        h.events.retain(hist::Ev::is_chaos);
    }
    let t0 = meta["t0"].as_f64().unwrap_or_else(|| h.events.first().map_or(0.0, hist::Ev::t));
    let t_end = meta["t_end"].as_f64().unwrap_or_else(|| h.events.last().map_or(t0, hist::Ev::t));
    let t_fe = meta["t_faults_end"].as_f64().unwrap_or(t_end);
    let t_fs = h
        .events
        .iter()
        .find(|e| e.is_chaos() && e.op() == "round" && e.s("phase") == Some("faults-start"))
        .map_or(t0, hist::Ev::t);
    let mut seen = std::collections::HashSet::new();
    let (mut faults, mut kills, mut schedule) = (Vec::new(), Vec::new(), Vec::new());
    for e in h.events.iter().filter(|e| e.is_chaos()) {
        let kind = e.s("kind").unwrap_or("");
        let at = e.t() - t0;
        match e.op() {
            "fault" if kind != "teardown" => {
                // counted as the checker counts them (check/faults.rs): a fault once per
                // fault_id, a SIGKILL per victim; a resume is the end of a pause, not a fault
                if kind != "resume" {
                    if seen.insert(e.u("fault_id").unwrap_or(0)) {
                        faults.push(at);
                    }
                    if e.s("signal") == Some("KILL") && kind != "db-terminate-backend" && kind != "db-crash" {
                        kills.push(at);
                    }
                }
            }
            "nemesis" | "link-heal" | "disk-heal" => {}
            _ => continue,
        }
        let detail = ["failpoint", "toxic", "reason", "shape", "ballast_bytes", "leader"]
            .iter()
            .filter_map(|k| {
                e.get(k).filter(|v| !v.is_null()).map(|v| format!("{k} {}", v.to_string().trim_matches('"')))
            })
            .collect::<Vec<_>>()
            .join(", ");
        schedule.push([
            format!("{at:.3}"),
            e.u("fault_id").map(|i| i.to_string()).unwrap_or_default(),
            if e.op() == "fault" { kind.to_string() } else { format!("{} {}", e.op(), e.s("phase").unwrap_or("")) },
            e.s("signal").unwrap_or("").to_string(),
            format!("{} {}", e.s("victim").unwrap_or(""), e.s("role").map(|r| format!("({r})")).unwrap_or_default()),
            format!("{}{detail}", e.hid().map(|x| format!("{} ", check::short(x))).unwrap_or_default()),
        ]);
    }
    let mut checkpoints: Vec<f64> = h
        .events
        .iter()
        .filter(|e| !e.is_chaos() && e.op() == "checkpoint" && e.ty() == "ok")
        .map(|e| e.t() - t0)
        .collect();
    let mut checkpoints_from = "acknowledged, from history.jsonl";
    if checkpoints.is_empty() {
        checkpoints = store_checkpoint_times(&d.join("store").join("dhp.sqlite3"), t0);
        checkpoints_from = "committed, from the store's checkpoint times";
    }
    Ok(Series {
        span_s: (t_end - t0).max(0.0),
        fault_phase: ((t_fs - t0).max(0.0), (t_fe - t0).max(0.0)),
        faults,
        kills,
        checkpoints,
        checkpoints_from,
        schedule,
    })
}

/// The `at` of every checkpoint row of a SQLite store (the writers' clocks), seconds after `t0`.
fn store_checkpoint_times(db: &Path, t0: f64) -> Vec<f64> {
    let Ok(c) = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else {
        return Vec::new();
    };
    let Ok(mut st) = c.prepare("SELECT at FROM checkpoints") else { return Vec::new() };
    let rows = st.query_map([], |r| r.get::<_, String>(0));
    rows.map(|it| it.filter_map(|r| r.ok()).filter_map(|s| check::iso_to_epoch(&s)).map(|t| t - t0).collect())
        .unwrap_or_default()
}

/// The run's own record (`results.json`), when it has been written.
fn results(dir: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(dir.join("results.json")).ok()?).ok()
}

fn status_label(v: &Verdict) -> (&'static str, String) {
    if !v.violations.is_empty() {
        ("violated", format!("VIOLATED ×{}", v.violations.len()))
    } else if !v.known.is_empty() {
        ("violated", format!("KNOWN-REF ×{}", v.known.len()))
    } else {
        match v.status.as_str() {
            "unchecked" => ("unchecked", "UNCHECKED".into()),
            "not-exercised" => ("not-exercised", "not exercised".into()),
            _ => ("held", "held".into()),
        }
    }
}

fn round_verdict(r: &RoundReport) -> (&'static str, String) {
    if !r.held {
        ("violated", if r.unexplained() == 0 { "KNOWN-REF".into() } else { format!("VIOLATED ({})", r.violations()) })
    } else if !r.unchecked.is_empty() {
        ("unchecked", format!("UNCHECKED ({})", r.unchecked.join(",")))
    } else {
        ("held", "HELD".into())
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{:.0} ms", v * 1000.0))
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;max-width:1700px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top;font-size:13px}
th{background:#f2f2f2}td.name{white-space:nowrap;font-family:monospace}td.what{max-width:46em}td.num{text-align:right;font-variant-numeric:tabular-nums}
.held{background:#dfd}.violated{background:#fcc}.unchecked{background:#fe9}.not-exercised{color:#777}
.coverage-matrix td.hit,.coverage-targets tr.hit{background:#dfd}.coverage-matrix td.missed,.coverage-targets tr.missed{background:#fe9}.coverage-matrix td.na,.coverage-targets tr.na{color:#999}
#verdict{font-size:1.2em;font-weight:bold;padding:.4em;display:inline-block}
.plots{display:flex;flex-wrap:wrap;gap:10px}.plots svg{border:1px solid #ddd}
details{margin:.3em 0}object.timeline{width:100%;border:1px solid #ddd}
section.round{border-top:2px solid #888;margin-top:2em}code{font-size:12px}
#live{border:2px solid #36c;padding:.5em 1em;margin:1em 0;background:#f4f8ff}";

/// What the run's saved `results.json` (or, while it runs or without one,
/// its round reports) say about the whole run.
struct RunHead {
    res: Option<Value>,
    command: Vec<String>,
    harness_error: Option<String>,
    /// The verdict as text, and the exit code (none while live).
    verdict: String,
    code: Option<i32>,
    /// The verdict's class (held, violated, unchecked).
    vclass: &'static str,
    seed: Option<u64>,
}

impl RunHead {
    fn new(dir: &Path, reports: &[RoundReport], t: &report::Totals, live: bool) -> Self {
        let res = results(dir);
        let command: Vec<String> = res
            .as_ref()
            .and_then(|r| r["command"].as_array())
            .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
            .unwrap_or_default();
        let allow_known = command.iter().any(|a| a == "--allow-known-reference-bugs");
        let harness_error = res.as_ref().and_then(|r| r["harness_error"].as_str().map(String::from));
        let code = res
            .as_ref()
            .and_then(|r| r["exit_code"].as_i64())
            .map_or_else(|| report::exit_code(reports, allow_known, harness_error.is_some()), |c| c as i32);
        let in_progress = res.is_none() && live;
        let verdict = if in_progress {
            format!("in progress: {} round(s) finished so far", t.rounds)
        } else {
            report::verdict_line(code, reports, t)
        };
        let seed = res.as_ref().and_then(|r| r["seed"].as_u64()).or_else(|| reports.first().map(|r| r.seed));
        let vclass = match code {
            _ if in_progress => "unchecked",
            0 => "held",
            3 | crate::coverage::EXIT_NOT_COVERED => "unchecked",
            _ => "violated",
        };
        RunHead { res, command, harness_error, verdict, code: (!in_progress).then_some(code), vclass, seed }
    }
}

/// The page for the run directory `dir`; `live`: the dashboard's live
/// section (markup and script) to put under the heading.
pub fn render(dir: &Path, live: Option<&str>) -> Result<String> {
    let mut rounds = Vec::new();
    for d in round_dirs(dir) {
        rounds.push(load_round(dir, &d)?);
    }
    let reports: Vec<RoundReport> = rounds.iter().map(|r| r.report.clone()).collect();
    let t = report::totals(&reports);
    let head = RunHead::new(dir, &reports, &t, live.is_some());
    let mut p = String::new();
    page_head(&mut p, &head, live);
    invariants_table(&mut p, &reports, &t);
    let _ = writeln!(p, "<h2>Coverage over {} round(s)</h2>", t.rounds);
    p.push_str(&crate::coverage::html(&t.coverage, "run"));
    rounds_table(&mut p, &rounds);
    totals_line(&mut p, &t);
    round_sections(&mut p, dir, &rounds);
    p.push_str("</div></body></html>\n");
    Ok(p)
}

/// The page's opening: title, heading, the live section, the verdict, and
/// the command the run was started with.
fn page_head(p: &mut String, head: &RunHead, live: Option<&str>) {
    let seed = head.seed;
    let _ = write!(
        p,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dhp-chaos run{}</title><style>{STYLE}</style></head><body>\n",
        seed.map(|s| format!(" seed {s}")).unwrap_or_default()
    );
    let _ = writeln!(p, "<h1>dhp-chaos run{}</h1>", seed.map(|s| format!(" — seed {s}")).unwrap_or_default());
    if let Some(l) = live {
        p.push_str(l);
    }
    p.push_str("<div id=\"report\">\n");
    let _ = writeln!(
        p,
        r#"<p><span id="verdict" class="{}" data-exit-code="{}">{}</span></p>"#,
        head.vclass,
        head.code.map(|c| c.to_string()).unwrap_or_default(),
        esc(&head.verdict)
    );
    if let Some(e) = &head.harness_error {
        let _ = writeln!(p, r#"<p class="violated">harness error: {}</p>"#, esc(e));
    }
    let command = &head.command;
    let _ = writeln!(
        p,
        "<p>{}{}<a href=\"results.json\">results.json</a> · this page is {}</p>",
        if command.is_empty() { String::new() } else { format!("<code>{}</code><br>", esc(&command.join(" "))) },
        head.res
            .as_ref()
            .and_then(|r| r["started_at"].as_str())
            .map(|s| format!("started {} · ", esc(s)))
            .unwrap_or_default(),
        if head.res.is_some() {
            "made from results.json and the round directories"
        } else {
            "made from the round directories (no results.json yet)"
        }
    );
}

/// The run's invariants: one row each, with its verdict over the rounds.
fn invariants_table(p: &mut String, reports: &[RoundReport], t: &report::Totals) {
    let _ = writeln!(p, "<h2>Invariants over {} round(s)</h2>", t.rounds);
    let _ = writeln!(
        p,
        r#"<table id="invariants"><tr><th>invariant</th><th>verdict</th><th>checked</th><th>violations</th><th>known reference weakness</th><th>unchecked in rounds</th><th>sources it rests on</th><th>what it promises</th></tr>"#
    );
    if let Some(last) = reports.last() {
        for i in &last.invariants {
            let Some(v) = t.invariants.get(&i.name) else { continue };
            let status = v["status"].as_str().unwrap_or("held");
            let (class, label) = match status {
                "violated" if v["violations"].as_u64() == Some(0) => ("violated", "KNOWN-REF"),
                "violated" => ("violated", "VIOLATED"),
                "unchecked" => ("unchecked", "UNCHECKED"),
                "not-exercised" => ("not-exercised", "not exercised"),
                _ => ("held", "held"),
            };
            let src: Vec<&str> = v["sources"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let _ = writeln!(
                p,
                r#"<tr class="verdict {class}" data-invariant="{n}" data-status="{status}"><td class="name">{n}</td><td class="status">{label}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="sources">{}</td><td class="what">{}</td></tr>"#,
                v["checked"].as_u64().unwrap_or(0),
                v["violations"].as_u64().unwrap_or(0),
                v["known_reference_weakness"].as_u64().unwrap_or(0),
                v["unchecked_rounds"].as_u64().unwrap_or(0),
                esc(&src.join(", ")),
                esc(&i.what),
                n = esc(&i.name),
            );
        }
    }
    p.push_str("</table>\n");
}

/// The rounds: one row each, with its verdict, figures and files.
fn rounds_table(p: &mut String, rounds: &[RoundFiles]) {
    let _ = writeln!(p, "<h2>Rounds</h2>");
    let _ = writeln!(
        p,
        r#"<table id="rounds"><tr><th>round</th><th>seed</th><th>verdict</th><th>time</th><th>faults</th><th>kills</th><th>kills/min</th><th>recoveries</th><th>done/dlq</th><th>det p50</th><th>det p99</th><th>files</th></tr>"#
    );
    for r in rounds {
        let rp = &r.report;
        let (class, label) = round_verdict(rp);
        let name = match rp.host {
            Some(h) => format!("{} host {h}{}", rp.round, if rp.standby { " (standby)" } else { "" }),
            None => rp.round.to_string(),
        };
        let _ = writeln!(
            p,
            r##"<tr class="round-row {class}" data-round="{}"><td><a class="round-link" href="{rel}/">round {}</a> · <a href="#{id}">details</a></td><td class="num">{}</td><td>{}</td><td class="num">{:.1} s</td><td class="num">{}</td><td class="num">{}</td><td class="num">{:.0}</td><td class="num">{}</td><td class="num">{}/{}</td><td class="num">{}</td><td class="num">{}</td><td><a href="{rel}/timeline.svg">timeline.svg</a> · <a href="{rel}/round-report.json">round-report.json</a>{}</td></tr>"##,
            esc(&r.rel),
            esc(&name),
            rp.seed,
            esc(&label),
            rp.round_s,
            rp.faults_by_kind.values().sum::<u64>(),
            rp.kills,
            rp.kills_per_min,
            rp.recoveries,
            rp.completed,
            rp.dlq,
            ms(rp.latencies.worker_kill.p50),
            ms(rp.latencies.worker_kill.p99),
            if r.series.is_some() {
                format!(
                    r#" · <a href="{0}/history.jsonl">history.jsonl</a> · <a href="{0}/procs/">procs/</a>"#,
                    esc(&r.rel)
                )
            } else {
                " · pruned (history and store not kept)".into()
            },
            rel = esc(&r.rel),
            id = anchor(&r.rel),
        );
    }
    p.push_str("</table>\n");
}

/// The run's totals in one line: kills and their rate, handoffs, detection.
fn totals_line(p: &mut String, t: &report::Totals) {
    let _ = writeln!(
        p,
        r#"<p id="totals">kills: {} in {:.1} s of fault injection (wall time) = <span id="kills-per-min">{:.0}</span> kills/min{}; handoffs {} completed, {} in the DLQ, of {}; checkpoints {}; worker SIGKILL → orphan p50 {}, p99 {} (n={}); work redone per fault at most {} chunk(s)</p>"#,
        t.kills,
        t.fault_phase_s,
        t.kills_per_min,
        if t.reports > t.rounds {
            format!(" ({} rounds, {} host reports side by side)", t.rounds, t.reports)
        } else {
            String::new()
        },
        t.completed,
        t.dlq,
        t.handoffs,
        t.checkpoints,
        ms(t.detection_worker_kill.p50),
        ms(t.detection_worker_kill.p99),
        t.detection_worker_kill.n,
        t.rework_max_chunks
    );
}

/// Each round's section; a `--hosts` round's own part (the hosts'
/// timeline) before its hosts' sections.
fn round_sections(p: &mut String, dir: &Path, rounds: &[RoundFiles]) {
    let mut last_round: Option<u32> = None;
    for r in rounds {
        let rp = &r.report;
        if rp.host.is_some() && last_round != Some(rp.round) {
            let base = r.rel.rsplit_once('/').map_or(".", |x| x.0);
            // the round's seed (each host's report has a seed of its own)
            let seed = std::fs::read(dir.join(base).join(crate::hosts::HOSTS_JSON))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|v| v["seed"].as_u64())
                .map_or_else(|| "?".to_string(), |s| s.to_string());
            let _ = writeln!(
                p,
                r#"<section class="hosts-round" id="{}"><h2>round {} (seed {seed}) — {} hosts</h2><object class="timeline" type="image/svg+xml" data="{b}/timeline.svg"><a href="{b}/timeline.svg">timeline.svg</a></object></section>"#,
                anchor(base),
                rp.round,
                rounds.iter().filter(|x| x.report.round == rp.round && !x.report.standby).count(),
                b = esc(base)
            );
        }
        last_round = Some(rp.round);
        round_section(p, r);
    }
}

/// An element id for a round directory (`round-0000/h1` → `r-round-0000-h1`).
fn anchor(rel: &str) -> String {
    format!("r-{}", rel.replace(['/', '.'], "-"))
}

fn round_section(p: &mut String, r: &RoundFiles) {
    let rp = &r.report;
    let (class, label) = round_verdict(rp);
    let title = match rp.host {
        Some(h) => format!("round {} host {h}{}", rp.round, if rp.standby { " (standby)" } else { "" }),
        None => format!("round {}", rp.round),
    };
    let _ = writeln!(
        p,
        r#"<section class="round" id="{}" data-round="{}"><h2>{} (seed {}) — <span class="{class}">{}</span></h2><p><a href="{rel}/">{rel}/</a> · replay: <code>{}</code></p>"#,
        anchor(&r.rel),
        esc(&r.rel),
        esc(&title),
        rp.seed,
        esc(&label),
        esc(&rp.replay),
        rel = esc(&r.rel)
    );
    let _ = writeln!(
        p,
        r#"<h3>Verdicts</h3><table class="round-verdicts"><tr><th>invariant</th><th>verdict</th><th>checked</th><th>sources it rests on</th><th>missing</th><th>findings</th></tr>"#
    );
    for v in &rp.invariants {
        let (vc, vl) = status_label(v);
        let mut findings = String::new();
        for m in v.violations.iter().chain(&v.known).take(20) {
            let _ = write!(findings, "<div class=\"violation\">{}</div>", esc(m));
        }
        if let Some(u) = &v.unchecked {
            let _ = write!(findings, "<div>unchecked: {}</div>", esc(u));
        }
        if !v.notes.is_empty() {
            let _ = write!(
                findings,
                "<details><summary>{} note(s)</summary>{}</details>",
                v.notes.len(),
                v.notes.iter().map(|n| format!("<div>{}</div>", esc(n))).collect::<String>()
            );
        }
        let _ = writeln!(
            p,
            r#"<tr class="verdict {vc}" data-invariant="{n}" data-status="{}"><td class="name">{n}</td><td class="status">{vl}</td><td class="num">{}</td><td class="sources">{}</td><td>{}</td><td class="what">{findings}</td></tr>"#,
            esc(&v.status),
            v.checked,
            esc(&v.sources.join(", ")),
            esc(&v.missing.join(", ")),
            n = esc(&v.name)
        );
    }
    p.push_str("</table>\n");

    let _ = writeln!(p, "<h3>Coverage</h3>");
    p.push_str(&crate::coverage::html(&rp.coverage, "round"));
    let _ = writeln!(p, "<h3>Fault schedule</h3>");
    let by_kind: Vec<String> = rp.faults_by_kind.iter().map(|(k, v)| format!("{} {v}", esc(k))).collect();
    let _ =
        writeln!(p, "<p>faults by kind: {}</p>", if by_kind.is_empty() { "none".into() } else { by_kind.join(", ") });
    match &r.series {
        Some(s) => {
            let _ = writeln!(
                p,
                r#"<details class="schedule"><summary>{} fault event(s) from history.jsonl</summary><table class="schedule"><tr><th>s</th><th>fault</th><th>kind</th><th>signal</th><th>victim</th><th>handoff, detail</th></tr>"#,
                s.schedule.len()
            );
            for row in s.schedule.iter().take(SCHEDULE_ROWS) {
                let _ =
                    writeln!(p, "<tr>{}</tr>", row.iter().map(|c| format!("<td>{}</td>", esc(c))).collect::<String>());
            }
            p.push_str("</table>");
            if s.schedule.len() > SCHEDULE_ROWS {
                let _ = write!(p, "<p>… {} more in history.jsonl</p>", s.schedule.len() - SCHEDULE_ROWS);
            }
            p.push_str("</details>\n");
        }
        None => p.push_str("<p>pruned round: its history was not kept, so only the counts above remain.</p>\n"),
    }

    let _ = writeln!(
        p,
        r#"<h3>Timeline</h3><object class="timeline" type="image/svg+xml" data="{0}/timeline.svg"><a href="{0}/timeline.svg">timeline.svg</a></object>"#,
        esc(&r.rel)
    );
    let _ = writeln!(p, r#"<h3>Plots</h3><div class="plots">"#);
    let wk = &rp.latencies.worker_kill;
    p.push_str(&plots::latency(&wk.samples, wk.p50, wk.p99));
    match &r.series {
        Some(s) => {
            p.push_str(&plots::faults_over_time(&s.faults, &s.kills, s.span_s, s.fault_phase));
            p.push_str(&plots::checkpoint_rate(&s.checkpoints, s.span_s, s.checkpoints_from));
        }
        None => p.push_str(
            "<p>(faults over time and checkpoint rate need the history, which this pruned round did not keep)</p>",
        ),
    }
    let mut rw: Vec<(String, String, u64)> =
        rp.rework_per_fault.iter().map(|x| (x.victim.clone(), x.hid.clone(), x.chunks)).collect();
    rw.sort();
    p.push_str(&plots::rework(&rw, 1));
    p.push_str("</div></section>\n");
}
