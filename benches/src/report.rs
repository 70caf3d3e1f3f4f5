//! The Markdown table of a comparison run: rates of both implementations,
//! their ratios, and each target met or missed — computed from the two
//! result files, never typed in.

use serde_json::Value;
use std::fmt::Write;

/// Ten megabytes, in KiB (10,000,000 bytes).
pub const RSS_TARGET_KIB: f64 = 10_000_000.0 / 1024.0;

fn rate(v: &Value, key: &str) -> Option<f64> {
    v.pointer(&format!("/ops/{key}/rate")).and_then(Value::as_f64).filter(|r| r.is_finite() && *r > 0.0)
}

fn skipped(v: &Value, key: &str) -> Option<String> {
    v.pointer(&format!("/ops/{key}/skipped")).and_then(Value::as_str).map(str::to_string)
}

/// `12,345`, `123.4`, `1.23`.
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    if x >= 1000.0 {
        let s = format!("{:.0}", x);
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn fmt_ratio(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}×")
    } else if x >= 10.0 {
        format!("{x:.1}×")
    } else {
        format!("{x:.2}×")
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "MET"
    } else {
        "**MISSED**"
    }
}

/// One target: what it asks, the number, and whether it holds.
#[derive(Debug, Clone)]
pub struct Target {
    /// What is measured.
    pub name: String,
    /// The target, in words.
    pub wanted: String,
    /// The measured number, in words.
    pub got: String,
    /// Whether the target holds; `None` when it was not measured.
    pub met: Option<bool>,
}

/// Compute the targets from the results.
pub fn targets(ours: &Value, reference: &Value, rss: &Value) -> Vec<Target> {
    let mut t = Vec::new();
    let fsync = rate(ours, "fsync_raw");
    let c100 = rate(ours, "checkpoint_100");
    let c100k = rate(ours, "checkpoint_100000");
    let mut push = |name: &str, wanted: &str, got: Option<(String, bool)>| {
        let (got, met) = match got {
            Some((g, m)) => (g, Some(m)),
            None => ("not measured".to_string(), None),
        };
        t.push(Target { name: name.into(), wanted: wanted.into(), got, met });
    };
    push(
        "checkpoint rate vs raw fsync",
        "≥ 0.70 × raw fsync rate (100 earlier checkpoints)",
        fsync.zip(c100).map(|(f, c)| (format!("{} / {} = {:.2}", fmt_num(c), fmt_num(f), c / f), c / f >= 0.7)),
    );
    push(
        "checkpoint rate is flat",
        "rate at 100k earlier ≥ 0.90 × rate at 100",
        c100.zip(c100k).map(|(a, b)| (format!("{} / {} = {:.2}", fmt_num(b), fmt_num(a), b / a), b / a >= 0.9)),
    );
    let ratio = |key: &str| rate(ours, key).zip(rate(reference, key)).map(|(a, b)| a / b);
    for (name, key, min) in [
        ("checkpoint at 2k vs reference", "checkpoint_2000", 8.0),
        ("ingest vs reference", "ingest", 20.0),
        ("dispatch vs reference", "dispatch", 3.0),
        ("claim vs reference", "claim", 3.0),
    ] {
        push(name, &format!("≥ {min:.0}× the reference"), ratio(key).map(|r| (fmt_ratio(r), r >= min)));
    }
    // What bounds a per-call dispatch or claim (issue 49, item 6): each is
    // one durable commit, and so is the reference's, so both wait on the
    // same fsync loop; judged against the commit floor of the same run.
    let floor = rate(ours, "sqlite_commit");
    for key in ["dispatch", "claim"] {
        push(
            &format!("per-call {key} vs the SQLite commit floor"),
            "≥ 0.70 × the 1-row commit rate (WAL, synchronous=FULL)",
            rate(ours, key)
                .zip(floor)
                .map(|(a, f)| (format!("{} / {} = {:.2}", fmt_num(a), fmt_num(f), a / f), a / f >= 0.7)),
        );
    }
    // The same, against bare commits of as many pages as the call writes
    // WAL frames: what is left is the call's own work, not its pages.
    for key in ["dispatch", "claim"] {
        let floor = rate(ours, &format!("sqlite_commit_pages_{key}"));
        let pages = ours.pointer(&format!("/ops/sqlite_commit_pages_{key}/pages")).and_then(Value::as_u64);
        push(
            &format!("per-call {key} vs the commit floor of its pages"),
            &format!(
                "≥ 0.70 × the rate of bare commits of {} pages each (its WAL frames per call)",
                pages.map_or("as many".to_string(), |p| p.to_string())
            ),
            rate(ours, key)
                .zip(floor)
                .map(|(a, f)| (format!("{} / {} = {:.2}", fmt_num(a), fmt_num(f), a / f), a / f >= 0.7)),
        );
    }
    let batched = |key: &str| rate(ours, &format!("{key}_batched")).zip(rate(reference, key)).map(|(a, b)| a / b);
    for (name, key) in
        [("dispatch with group commit vs reference", "dispatch"), ("claim with group commit vs reference", "claim")]
    {
        push(
            name,
            "≥ 3× the reference's per-call rate (32 per transaction)",
            batched(key).map(|r| (fmt_ratio(r), r >= 3.0)),
        );
    }
    let rss_kib = rss.pointer("/ours/max_rss_kib").and_then(Value::as_f64).filter(|x| *x > 0.0);
    push(
        "worker peak RSS (release build)",
        "`dhp work` ≤ 10 MB (10,000,000 bytes)",
        rss_kib.map(|k| (format!("{:.1} MB ({} KiB)", k * 1024.0 / 1e6, fmt_num(k)), k <= RSS_TARGET_KIB)),
    );
    let min_kib = rss.pointer("/ours_min_size/max_rss_kib").and_then(Value::as_f64).filter(|x| *x > 0.0);
    if min_kib.is_some() {
        push(
            "worker peak RSS (`--profile min-size` deployment build)",
            "`dhp work` ≤ 10 MB (10,000,000 bytes)",
            min_kib.map(|k| (format!("{:.1} MB ({} KiB)", k * 1024.0 / 1e6, fmt_num(k)), k <= RSS_TARGET_KIB)),
        );
    }
    t
}

/// Bounds derived from the measured rates (sentences, numbers from the run).
pub fn limits(ours: &Value, reference: &Value, rss: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let commit = rate(ours, "sqlite_commit");
    let fsync = rate(ours, "fsync_raw");
    if let (Some(c), Some(f)) = (commit, fsync) {
        out.push(format!(
            "A durable one-commit operation cannot beat this machine's SQLite commit floor: {} commits/s, {:.2} × the raw \
             fsync rate (a WAL commit writes whole 4 KiB pages and fsyncs; the probe appends 100 bytes).",
            fmt_num(c),
            c / f
        ));
    }
    if let Some(c) = commit {
        for (key, what) in [("dispatch", "dispatch"), ("claim", "claim")] {
            if let Some(r) = rate(reference, key) {
                out.push(format!(
                    "Per-call {what} is one commit, so it is at most {} /s here: at most {} the reference's {} /s \
                     (the reference pays one fsync per autocommit statement: {}). Beyond that only sharing fsyncs \
                     helps (group commit rows).",
                    fmt_num(c),
                    fmt_ratio(c / r),
                    fmt_num(r),
                    if key == "dispatch" { "one for dispatch" } else { "two for claim" }
                ));
            }
        }
    }
    for key in ["dispatch", "claim"] {
        let frames = ours.pointer(&format!("/ops/{key}/wal_frames")).and_then(Value::as_f64);
        if let (Some(fr), Some(f), Some(c)) = (frames, rate(ours, &format!("sqlite_commit_pages_{key}")), commit) {
            out.push(format!(
                "A per-call {key} writes {fr:.1} WAL frames (pages) per commit: bare commits of {} pages run at {} /s \
                 here ({:.2} × the 1-row floor), so that many pages bound it before any protocol work.",
                fr.round().max(1.0),
                fmt_num(f),
                f / c
            ));
        }
    }
    if let (Some(a), Some(b), Some(o)) =
        (rate(ours, "lock_race_default"), rate(ours, "lock_race_fine"), rate(ours, "recover_race"))
    {
        out.push(format!(
            "A recover race ends when the last loser of BEGIN IMMEDIATE has had the lock, so it is decided by how \
             waiters poll for it: the bare CAS in raw SQL completes {} races/s with SQLite's busy_timeout (sleeps of \
             1, 2, 5, 10 … ms) and {} with a 100 µs busy handler; dhp-core's recover (full protocol, own connection \
             per racer) completes {}.",
            fmt_num(a),
            fmt_num(b),
            fmt_num(o)
        ));
    }
    let d = |k: &str| rss.pointer(&format!("/ours/detail/{k}")).and_then(Value::as_f64);
    if let (Some(peak), Some(file), Some(anon)) =
        (rss.pointer("/ours/max_rss_kib").and_then(Value::as_f64), d("file_kib_at_exit"), d("anon_kib_at_exit"))
    {
        let bin = rss
            .pointer("/ours/detail/top_mappings_at_exit/0")
            .and_then(Value::as_array)
            .and_then(|m| Some((m.first()?.as_f64()?, m.get(1)?.as_str()?.to_string())));
        let mut l = format!(
            "Worker peak RSS {} KiB: at exit {} KiB file-backed (program text and libraries) and {} KiB anonymous",
            fmt_num(peak),
            fmt_num(file),
            fmt_num(anon)
        );
        if let Some((kib, name)) = bin {
            // The file name only: the report is committed, a path would be
            // this machine's.
            let name =
                std::path::Path::new(&name).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or(name);
            let _ = write!(l, "; the largest mapping is `{name}` with {} KiB resident", fmt_num(kib));
        }
        l.push('.');
        out.push(l);
    }
    out
}

/// Rows of the main table: (label, key, unit). Keys absent from both
/// result files are left out.
const ROWS: &[(&str, &str)] = &[
    ("raw fsync: 100-byte append + fdatasync", "fsync_raw"),
    ("SQLite floor: 1-row commit, WAL, synchronous=FULL", "sqlite_commit"),
    ("SQLite floor: commit of a dispatch's pages (its WAL frames, rounded)", "sqlite_commit_pages_dispatch"),
    ("SQLite floor: commit of a claim's pages (its WAL frames, rounded)", "sqlite_commit_pages_claim"),
    ("envelope build + handoff_id", "envelope_build"),
    ("canonical hash, 1 KB state", "canonical_hash_1k"),
    ("canonical hash, 100 KB state", "canonical_hash_100k"),
    ("dispatch (SDK: build + verify + store)", "dispatch"),
    ("dispatch, group commit (32 per transaction)", "dispatch_batched"),
    ("claim", "claim"),
    ("claim, group commit (32 per transaction)", "claim_batched"),
    ("checkpoint, 100 earlier", "checkpoint_100"),
    ("checkpoint, 1k earlier", "checkpoint_1000"),
    ("checkpoint, 2k earlier", "checkpoint_2000"),
    ("checkpoint, 10k earlier", "checkpoint_10000"),
    ("checkpoint, 100k earlier", "checkpoint_100000"),
    ("group commit, best total", "group_commit_best"),
    ("recover CAS, 8 racers", "recover_race"),
    ("… same CAS in raw SQL, SQLite busy_timeout", "lock_race_default"),
    ("… same CAS in raw SQL, 100 µs busy handler", "lock_race_fine"),
    ("ingest, 10k-line log", "ingest"),
    ("TCP ship, synchronous", "ship_tcp_sync"),
    ("TCP ship, asynchronous", "ship_tcp_async"),
    ("supervisor scan, 10k handoffs", "scan"),
];

/// True when either side ran with `--quick` (tiny sizes).
pub fn is_smoke(ours: &Value, reference: &Value) -> bool {
    ours["quick"] == true || reference["quick"] == true
}

/// The full Markdown report. A smoke run (`--quick`) says so at the top and
/// judges no target: its sizes are not the ones the targets are about.
pub fn markdown(ours: &Value, reference: &Value, rss: &Value, machine: &Value, command: &str) -> String {
    let mut s = String::new();
    let smoke = is_smoke(ours, reference);
    if smoke {
        let _ = writeln!(
            s,
            "**Smoke run (`--quick`)**: tiny sizes, to check that every code path of the comparison works. \
             The rates below are not comparable with a full run and no target is judged.\n"
        );
    }
    let _ = writeln!(s, "| operation | unit | dhp-rs | reference 1.3.0 | dhp-rs / ref |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|");
    for (label, key) in ROWS {
        rate_row(&mut s, ours, reference, label, key);
    }
    rss_rows(&mut s, rss);
    targets_section(&mut s, ours, reference, rss, smoke);
    group_commit_section(&mut s, ours);
    machine_section(&mut s, ours, reference, machine, command);
    s
}

/// One operation's row: both rates and their ratio, or why one was not run
/// (none when neither side has it).
fn rate_row(s: &mut String, ours: &Value, reference: &Value, label: &str, key: &str) {
    let o = rate(ours, key);
    // A batched row is compared with the reference's per-call rate
    // (the reference has no batch API).
    let ref_key = key.strip_suffix("_batched").unwrap_or(key);
    let r = rate(reference, ref_key);
    let in_ours = ours.pointer(&format!("/ops/{key}")).is_some();
    let in_ref = reference.pointer(&format!("/ops/{ref_key}")).is_some();
    if !in_ours && !in_ref {
        return;
    }
    let unit = ours
        .pointer(&format!("/ops/{key}/unit"))
        .or_else(|| reference.pointer(&format!("/ops/{key}/unit")))
        .and_then(Value::as_str)
        .unwrap_or("");
    let rcell = match (r, skipped(reference, ref_key)) {
        (Some(r), _) if ref_key != key => format!("{} (per call)", fmt_num(r)),
        (Some(r), _) => fmt_num(r),
        (None, Some(why)) => format!("not run: {why}"),
        (None, None)
            if key.starts_with("fsync")
                || key.starts_with("sqlite")
                || key.starts_with("group")
                || key.starts_with("lock_race") =>
        {
            "—".into()
        }
        (None, None) => "not run".into(),
    };
    let ocell = match (o, skipped(ours, key)) {
        (Some(o), _) => fmt_num(o),
        (None, Some(why)) => format!("not run: {why}"),
        (None, None) => "not run".into(),
    };
    let ratio = o.zip(r).map(|(a, b)| fmt_ratio(a / b)).unwrap_or_else(|| "—".into());
    let _ = writeln!(s, "| {label} | {unit} | {ocell} | {rcell} | {ratio} |");
}

/// The workers' peak RSS rows (the size-optimized build's too, when measured).
fn rss_rows(s: &mut String, rss: &Value) {
    let ok = rss.pointer("/ours/max_rss_kib").and_then(Value::as_f64);
    let rk = rss.pointer("/reference/max_rss_kib").and_then(Value::as_f64);
    if ok.is_none() && rk.is_none() {
        return;
    }
    let cell = |x: Option<f64>| x.map(|k| format!("{:.1} MB", k * 1024.0 / 1e6)).unwrap_or_else(|| "not run".into());
    let ratio = ok.zip(rk).map(|(a, b)| format!("{} smaller", fmt_ratio(b / a))).unwrap_or_else(|| "—".into());
    let _ = writeln!(
        s,
        "| worker process peak RSS (census, {}) | MB | {} | {} | {ratio} |",
        rss.pointer("/census").and_then(Value::as_str).unwrap_or("?"),
        cell(ok),
        cell(rk)
    );
    if let Some(mk) = rss.pointer("/ours_min_size/max_rss_kib").and_then(Value::as_f64) {
        let ratio = rk.map(|b| format!("{} smaller", fmt_ratio(b / mk))).unwrap_or_else(|| "—".into());
        let _ = writeln!(
            s,
            "| … same, dhp built with `--profile min-size` (opt-level s, fat LTO) | MB | {} | {} | {ratio} |",
            cell(Some(mk)),
            cell(rk)
        );
    }
}

/// The targets and their verdicts, and what bounds the numbers (neither
/// judged in a smoke run).
fn targets_section(s: &mut String, ours: &Value, reference: &Value, rss: &Value, smoke: bool) {
    if smoke {
        let _ = writeln!(
            s,
            "\n### Targets\n\nNot judged: a smoke run. Run `benches/compare.sh` (full sizes) for the verdicts."
        );
    } else {
        let _ = writeln!(s, "\n### Targets\n");
        let _ = writeln!(s, "| target | wanted | measured | verdict |");
        let _ = writeln!(s, "|---|---|---|---|");
        for t in targets(ours, reference, rss) {
            let v = match t.met {
                Some(m) => verdict(m),
                None => "not measured",
            };
            let _ = writeln!(s, "| {} | {} | {} | {v} |", t.name, t.wanted, t.got);
        }
    }
    let limits = if smoke { Vec::new() } else { limits(ours, reference, rss) };
    if !limits.is_empty() {
        let _ = writeln!(s, "\n### What bounds the numbers (computed from this run)\n");
        for l in limits {
            let _ = writeln!(s, "- {l}");
        }
    }
}

/// dhp-rs's group commit configurations, when measured.
fn group_commit_section(s: &mut String, ours: &Value) {
    let Some(g) = ours.pointer("/ops/group_commit").and_then(Value::as_object) else { return };
    let _ = writeln!(s, "\n### Group commit (dhp-rs)\n");
    let _ = writeln!(s, "| configuration | checkpoints/s (all handoffs) |");
    let _ = writeln!(s, "|---|---:|");
    for v in g.values() {
        let _ = writeln!(
            s,
            "| {} | {} |",
            v["detail"].as_str().unwrap_or(""),
            fmt_num(v["rate"].as_f64().unwrap_or(f64::NAN))
        );
    }
}

/// The machine, the command that produced the report, and both sides' notes.
fn machine_section(s: &mut String, ours: &Value, reference: &Value, machine: &Value, command: &str) {
    let _ = writeln!(s, "\n### Machine\n");
    let m = machine;
    let _ = writeln!(
        s,
        "- {} CPUs (nproc): {}\n- memory: {} GiB\n- scratch file system: {} ({}, {}), kernel {}\n- load average (1 min) at start {:.2}, at end of our run {:.2}, at end of the reference run {:.2}",
        m["nproc"], m["cpu"].as_str().unwrap_or("?"), m["mem_gib"], m["mount"].as_str().unwrap_or("?"),
        m["fstype"].as_str().unwrap_or("?"), m["mount_options"].as_str().unwrap_or("?"), m["kernel"].as_str().unwrap_or("?"),
        m["loadavg_start"].as_f64().unwrap_or(f64::NAN), ours["loadavg_end"].as_f64().unwrap_or(f64::NAN),
        reference["loadavg_end"].as_f64().unwrap_or(f64::NAN),
    );
    let _ = writeln!(s, "\nProduced by `{command}`.");
    let notes: Vec<String> = [ours, reference]
        .iter()
        .filter_map(|v| v.get("notes").and_then(Value::as_array))
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(s);
        for n in notes {
            let _ = writeln!(s, "- {n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn targets_are_computed_from_rates() {
        let ours = json!({"ops": {"fsync_raw": {"rate": 1000.0}, "checkpoint_100": {"rate": 800.0},
            "checkpoint_100000": {"rate": 700.0}, "checkpoint_2000": {"rate": 800.0},
            "ingest": {"rate": 100000.0}, "dispatch": {"rate": 900.0, "wal_frames": 4.2}, "claim": {"rate": 600.0},
            "sqlite_commit": {"rate": 1000.0}, "sqlite_commit_pages_dispatch": {"rate": 1200.0, "pages": 4},
            "sqlite_commit_pages_claim": {"rate": 1000.0, "pages": 6}}});
        let reference = json!({"ops": {"checkpoint_2000": {"rate": 50.0}, "ingest": {"rate": 1000.0},
            "dispatch": {"rate": 400.0}, "claim": {"rate": 100.0}, "checkpoint_100000": {"skipped": "O(n)"}}});
        let rss = json!({"ours": {"max_rss_kib": 5000.0}});
        let t = targets(&ours, &reference, &rss);
        let met: Vec<Option<bool>> = t.iter().map(|t| t.met).collect();
        assert_eq!(
            met,
            vec![
                Some(true),
                Some(false),
                Some(true),
                Some(true),
                Some(false),
                Some(true),
                Some(true),
                Some(false),
                Some(true),
                Some(false),
                None,
                None,
                Some(true)
            ]
        );
        assert!(t[8].wanted.contains("of 4 pages each") && t[8].got == "900 / 1,200 = 0.75", "{:?}", t[8]);
        let md = markdown(&ours, &reference, &rss, &json!({}), "test");
        assert!(md.contains("not run: O(n)"), "{md}");
        assert!(
            md.contains("A per-call dispatch writes 4.2 WAL frames (pages) per commit: bare commits of 4 pages"),
            "{md}"
        );
        assert!(md.contains("**MISSED**"));
        assert_eq!(fmt_num(1234567.0), "1,234,567");
        assert!(!md.contains("Smoke run"));
    }

    #[test]
    fn a_smoke_run_judges_no_target() {
        // Quick sizes: the checkpoint rate at "100k earlier" is really at a
        // few hundred, so a verdict would be meaningless either way.
        let ours = json!({"quick": true, "ops": {"fsync_raw": {"rate": 1000.0}, "checkpoint_100": {"rate": 100.0},
            "checkpoint_100000": {"rate": 10.0}, "dispatch": {"rate": 10.0}}});
        let reference = json!({"quick": true, "ops": {"dispatch": {"rate": 400.0}}});
        let md = markdown(&ours, &reference, &json!({}), &json!({}), "benches/compare.sh --quick");
        assert!(md.starts_with("**Smoke run (`--quick`)**"), "{md}");
        assert!(!md.contains("MISSED") && !md.contains("| MET |"), "{md}");
        assert!(md.contains("Not judged: a smoke run"), "{md}");
    }

    #[test]
    fn the_report_names_no_machine_path() {
        let ours = json!({"ops": {}});
        let rss = json!({"ours": {"max_rss_kib": 9000.0, "detail": {"file_kib_at_exit": 7000.0, "anon_kib_at_exit": 2000.0,
            "top_mappings_at_exit": [[6000.0, "/home/someone/checkout/target/release/dhp"]]}}});
        let md = markdown(&ours, &json!({"ops": {}}), &rss, &json!({}), "benches/compare.sh");
        assert!(md.contains("the largest mapping is `dhp`"), "{md}");
        assert!(!md.contains("/home/someone"), "{md}");
    }
}
