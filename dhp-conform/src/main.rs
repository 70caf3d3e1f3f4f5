//! `dhp-conform`: run the DHP conformance assertions against one or more
//! implementations through their adapters.
//!
//! ```text
//! cargo run -p dhp-conform                         # our implementation
//! cargo run -p dhp-conform -- --impl reference     # the Python reference
//! cargo run -p dhp-conform -- --impl 'node my-adapter.js'
//! cargo run -p dhp-conform -- --cross reference    # + ours→reference, reference→ours
//! cargo run -p dhp-conform -- --compare ours reference
//! cargo run -p dhp-conform -- --list | --explain fencing | --list --format json
//! cargo run -p dhp-conform -- --html DIR --badge DIR --junit out.xml --format markdown
//! cargo run -p dhp-conform -- --impl reference --expect dhp-conform/expectations/reference.json
//! ```
//!
//! Exit status ([`dhp_conform::cli::EXIT_FAILED`], [`dhp_conform::cli::EXIT_USAGE`]):
//! 0 when nothing failed or errored (with `--expect`: every outcome as
//! pinned), 1 otherwise, 2 for a bad command line (a filter that matches no
//! assertion, a report path that cannot be written), an adapter that cannot
//! start, or a report that could not be written. 101 is only ever a panic
//! of the runner itself.

mod explore_main;

use clap::Parser;
use dhp_conform::cli::{Cli, Format, EXIT_FAILED, EXIT_USAGE};
use dhp_conform::expect::Expectations;
use dhp_conform::report::{self, Counts, Record, Records};
use dhp_conform::stores::StoreBase;
use dhp_conform::suite::{self, Impl, Level, Options, Outcome};
use dhp_conform::{assertions, catalogue};
use libtest_mimic::{Completion, Failed, Trial};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

fn sh_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Resolve `ours` / `reference` to commands; anything else is a command.
fn resolve(spec: &str) -> Result<(String, Option<String>), String> {
    match spec {
        "ours" => {
            // dhp-rs's adapter, a program of its own (adapters/dhp-rs): the
            // judge links no implementation, ours included.
            let adapter = dhp_conform::locate::dhp_adapter().map_err(|e| e.to_string())?;
            Ok((sh_quote(&adapter.to_string_lossy()), Some("ours".into())))
        }
        "reference" => {
            // This binary runs the embedded adapter script with the
            // reference's interpreter: no path to a source checkout needed.
            let py = dhp_conform::locate::python().map_err(|e| e.to_string())?;
            let exe = std::env::current_exe().map_err(|e| format!("locating dhp-conform: {e}"))?;
            Ok((
                format!("{} {REFERENCE_MODE} {}", sh_quote(&exe.to_string_lossy()), sh_quote(&py.to_string_lossy())),
                Some("reference".into()),
            ))
        }
        cmd => {
            check_program(cmd)?;
            Ok((cmd.to_string(), None))
        }
    }
}

/// A command whose program is a plain name (no path, quoting or variable
/// assignment) must name a program on PATH: a mistyped `--impl referense`
/// is a usage error before anything runs, not 29 errored assertions.
fn check_program(cmd: &str) -> Result<(), String> {
    let Some(first) = cmd.split_whitespace().next() else {
        return Err("--impl: empty command".into());
    };
    let plain = first.chars().all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c));
    if !plain {
        return Ok(()); // a path or shell syntax: if it cannot start, that is reported once
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|d| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(d.join(first)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    });
    if found {
        Ok(())
    } else {
        Err(format!(
            "unknown implementation `{first}`: not `ours`, not `reference`, and no program `{first}` on PATH \
(give an adapter command line, e.g. --impl 'node ./my-adapter.js')"
        ))
    }
}

/// What libtest-mimic prints to the operator's terminal: an adapter's
/// text with every control sequence stripped (`ESC]0;`, `ESC[2J`, …).
fn to_trial_result(o: &Outcome) -> Result<Completion, Failed> {
    let t = dhp_markup::terminal;
    match o {
        Outcome::Passed => Ok(Completion::Completed),
        Outcome::Skipped(r) => Ok(Completion::ignored_with(t(r))),
        Outcome::Failed(m) => Err(t(m).into()),
        Outcome::Errored(m) => Err(format!("ERRORED (no verdict: the adapter exchange broke): {}", t(m)).into()),
    }
}

/// First argument that turns this binary into the reference's adapter
/// (`--impl reference`): `__reference-adapter PYTHON` runs
/// `adapters/reference/python_ref.py`, embedded at build time, with PYTHON.
const REFERENCE_MODE: &str = "__reference-adapter";
const PYTHON_REF_ADAPTER: &str = include_str!("../../adapters/reference/python_ref.py");

/// Replace this process with `PYTHON -c <the reference adapter>`; returns
/// only when that cannot start.
fn exec_reference_adapter(python: Option<String>) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let Some(py) = python else {
        eprintln!("dhp-conform {REFERENCE_MODE}: the python interpreter is missing");
        return ExitCode::from(2);
    };
    let err = std::process::Command::new(&py).arg("-c").arg(PYTHON_REF_ADAPTER).exec();
    eprintln!("dhp-conform {REFERENCE_MODE}: cannot run {py}: {err}");
    ExitCode::from(2)
}

/// `--list` and `--explain`: the catalogue, without starting anything.
fn catalogue_only(cli: &Cli) -> Option<ExitCode> {
    if let Some(id) = &cli.explain {
        return Some(match catalogue::find(id) {
            Some(e) => emit(&e.explain()),
            None => {
                eprintln!("dhp-conform: no assertion `{id}` (see dhp-conform --list)");
                ExitCode::from(2)
            }
        });
    }
    if !cli.list {
        return None;
    }
    let (core, extended, cross) = cli.level.levels();
    let entries: Vec<catalogue::Entry> = catalogue::entries()
        .into_iter()
        .filter(|e| match e.level {
            Level::Core => core,
            Level::Extended => extended,
            Level::Cross => cross,
            Level::Explore => false,
        })
        .filter(|e| {
            cli.filters.is_empty()
                || cli.filters.iter().any(|f| match cli.exact {
                    true => e.id == *f,
                    false => e.id.contains(f.as_str()) || e.level.as_str().contains(f.as_str()),
                })
        })
        .filter(|e| !cli.skip.iter().any(|s| e.id.contains(s.as_str())))
        .collect();
    Some(emit(&match cli.format() {
        Format::Json => format!("{}\n", catalogue::json(&entries)),
        Format::Markdown => catalogue::markdown(&entries),
        Format::Pretty | Format::Terse => catalogue::text(&entries),
    }))
}

/// Print to stdout; a closed pipe (`dhp-conform --list | head`) is not an
/// error worth a panic.
fn emit(s: &str) -> ExitCode {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dhp-conform: writing stdout: {e}");
            ExitCode::from(2)
        }
    }
}

/// `--format json`: one event per assertion as it ends, naming the
/// implementation (libtest's own events name only the assertion).
fn result_event(implementation: &str, assertion: &str, level: Level, outcome: &Outcome, seconds: f64) {
    let line = serde_json::json!({
        "type": "dhp-conform", "event": "result", "implementation": implementation, "assertion": assertion,
        "level": level.as_str(), "outcome": outcome.word(), "message": outcome.message(), "seconds": seconds,
    });
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some(REFERENCE_MODE) {
        // an adapter itself (it carries its runner's marker): never sweep from here
        return exec_reference_adapter(std::env::args().nth(2));
    }
    let code = run_main();
    // every pool is closed by now: what still carries this run's marker
    // escaped its adapter's tree (a double-forked helper)
    dhp_conform::pgroup::sweep();
    code
}

fn run_main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some(REFERENCE_MODE) {
        return exec_reference_adapter(std::env::args().nth(2));
    }
    if std::env::args().nth(1).as_deref() == Some("replay") {
        return explore_main::replay(resolve);
    }
    let cli = Cli::parse();
    if let Some(code) = catalogue_only(&cli) {
        return code;
    }
    let timeout = match std::time::Duration::try_from_secs_f64(cli.timeout) {
        Ok(t) if t > std::time::Duration::ZERO && cli.timeout <= 86_400.0 => t,
        _ => {
            eprintln!("dhp-conform: --timeout must be in (0, 86400] seconds, got {}", cli.timeout);
            return ExitCode::from(2);
        }
    };
    let expectations = match &cli.expect {
        None => None,
        Some(path) => {
            let explore_ids = dhp_conform::explore::ids();
            let mut ids: Vec<&str> = catalogue::entries().iter().map(|e| e.id).collect();
            ids.extend(explore_ids.iter().map(String::as_str));
            match Expectations::load(path, &ids) {
                Ok(e) => Some(e),
                Err(e) => {
                    eprintln!("dhp-conform: --expect: {e}");
                    return ExitCode::from(2);
                }
            }
        }
    };
    if let Err(e) = dhp_conform::cli::check_report_paths(&cli) {
        eprintln!("dhp-conform: {e} (nothing was run)");
        return ExitCode::from(EXIT_USAGE);
    }
    let opts = Arc::new(Options { timeout, echo_stderr: cli.adapter_stderr, keep: cli.keep });
    let compare = !cli.compare.is_empty();
    let specs: Vec<String> = if compare {
        cli.compare.clone()
    } else if cli.impls.is_empty() {
        vec!["ours".into()]
    } else {
        cli.impls.clone()
    };
    let format = cli.format();
    // JSON and Markdown keep stdout for the report.
    let quiet_stdout = matches!(format, Format::Json | Format::Markdown);
    let say = |s: &str| if quiet_stdout { eprintln!("{s}") } else { println!("{s}") };

    // Every --impl/--cross/--compare word is resolved before any adapter starts.
    let (mut r_under, mut r_partners) = (Vec::new(), Vec::new());
    for (list, out) in [(&specs, &mut r_under), (&cli.cross, &mut r_partners)] {
        for s in list {
            match resolve(s) {
                Ok(r) => out.push(r),
                Err(e) => {
                    eprintln!("dhp-conform: {e}");
                    return ExitCode::from(2);
                }
            }
        }
    }
    if let Err(e) = dhp_conform::pgroup::kill_all_on_signal() {
        eprintln!("dhp-conform: cannot install signal handlers: {e}");
        return ExitCode::from(2);
    }
    let mut stores = Vec::new();
    for s in &cli.store {
        match StoreBase::parse(s) {
            Ok(b) => stores.push(Arc::new(b)),
            Err(e) => {
                eprintln!("dhp-conform: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if stores.is_empty() {
        stores.push(Arc::default());
    }
    // With several --store, each implementation runs once per engine.
    let suffix = stores.len() > 1;
    let connect = |list: Vec<(String, Option<String>)>, stores: &[Arc<StoreBase>]| -> Vec<Impl> {
        let mut out = Vec::new();
        for (cmd, label) in list {
            for st in stores {
                let mut imp = Impl::connect_on(&cmd, label.as_deref(), st.clone(), &opts);
                if suffix {
                    imp.label = format!("{}@{}", imp.label, st.engine());
                }
                out.push(imp);
            }
        }
        out
    };
    let mut under_test = connect(r_under, &stores);
    // partners (--cross) keep the default store: the point is another implementation
    let mut partners = connect(r_partners, &[Arc::default()]);
    // An adapter that cannot even start would error every assertion with
    // the same message: say it once and stop.
    let dead: Vec<&Impl> = under_test.iter().chain(&partners).filter(|i| i.hello.is_err()).collect();
    if !dead.is_empty() {
        for imp in &dead {
            if let Err(e) = &imp.hello {
                let shown = dhp_secrets::mask_secrets(&format!("`{}` did not start: {e}", imp.command));
                eprintln!("dhp-conform: the adapter {shown}");
            }
        }
        eprintln!("dhp-conform: nothing was run");
        for imp in under_test.iter().chain(&partners) {
            imp.shutdown();
        }
        return ExitCode::from(2);
    }
    // Unique labels.
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for imp in under_test.iter_mut().chain(partners.iter_mut()) {
        let n = seen.entry(imp.label.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            imp.label = format!("{}-{}", imp.label, n);
        }
    }
    let under_test: Vec<Arc<Impl>> = under_test.into_iter().map(Arc::new).collect();
    let partners: Vec<Arc<Impl>> = partners.into_iter().map(Arc::new).collect();
    for imp in under_test.iter().chain(&partners) {
        say(&format!("implementation {}", imp.describe()));
    }

    let json_events = matches!(format, Format::Json);
    let (core, extended, cross) = cli.level.levels();
    let records = Arc::new(Records::default());
    let multi = under_test.len() > 1;
    let mut trials = Vec::new();
    let mut rows: Vec<(String, Level)> = Vec::new();
    let exploring = cli.explore.explore;
    for a in if exploring { Vec::new() } else { assertions::all() } {
        let wanted = match a.level {
            Level::Core => core,
            Level::Extended => extended,
            Level::Cross => cross,
            Level::Explore => false,
        };
        if !wanted {
            continue;
        }
        rows.push((a.name.to_string(), a.level));
        for imp in &under_test {
            let (imp, records, opts) = (imp.clone(), records.clone(), opts.clone());
            let kind = if multi {
                format!("{}/{}", dhp_markup::terminal(&imp.label), a.level.as_str())
            } else {
                a.level.as_str().to_string()
            };
            trials.push(
                Trial::ignorable_test(a.name, move || {
                    let mark = imp.stderr.mark();
                    let (outcome, seconds) = suite::run_one(&imp, &a, &opts);
                    let outcome = report::masked(outcome);
                    let res = to_trial_result(&outcome);
                    if json_events {
                        result_event(&imp.label, a.name, a.level, &outcome, seconds);
                    }
                    let stderr = if matches!(outcome, Outcome::Failed(_) | Outcome::Errored(_)) {
                        imp.stderr.since(mark)
                    } else {
                        Vec::new()
                    };
                    records.push(Record {
                        implementation: imp.label.clone(),
                        assertion: a.name.into(),
                        level: a.level,
                        outcome,
                        seconds,
                        stderr,
                        expected: None,
                    });
                    res
                })
                .with_kind(kind),
            );
        }
    }
    if exploring {
        for imp in &under_test {
            let t =
                explore_main::trial(imp.clone(), &cli.explore, cli.expect.as_deref(), opts.clone(), records.clone());
            match t {
                Ok(t) => trials.push(t.with_kind("explore")),
                Err(e) => {
                    eprintln!("dhp-conform: {e}");
                    return ExitCode::from(EXIT_USAGE);
                }
            }
        }
    }
    let everyone: Vec<Arc<Impl>> = under_test.iter().chain(&partners).cloned().collect();
    if cross && !compare && !exploring && everyone.len() > 1 {
        for x in assertions::cross::all() {
            for a in &everyone {
                for b in &everyone {
                    if Arc::ptr_eq(a, b) {
                        continue;
                    }
                    let pair = format!("{}->{}", a.label, b.label);
                    let (a, b, records, opts) = (a.clone(), b.clone(), records.clone(), opts.clone());
                    trials.push(
                        Trial::ignorable_test(format!("{}:{}", x.name, dhp_markup::terminal(&pair)), move || {
                            let marks = (a.stderr.mark(), b.stderr.mark());
                            let (outcome, seconds) = suite::run_cross(&a, &b, &x, &opts);
                            let outcome = report::masked(outcome);
                            let res = to_trial_result(&outcome);
                            if json_events {
                                result_event(&pair, x.name, Level::Cross, &outcome, seconds);
                            }
                            let mut stderr = Vec::new();
                            if matches!(outcome, Outcome::Failed(_) | Outcome::Errored(_)) {
                                stderr
                                    .extend(a.stderr.since(marks.0).into_iter().map(|l| format!("[{}] {l}", a.label)));
                                stderr
                                    .extend(b.stderr.since(marks.1).into_iter().map(|l| format!("[{}] {l}", b.label)));
                            }
                            records.push(Record {
                                implementation: pair,
                                assertion: x.name.into(),
                                level: Level::Cross,
                                outcome,
                                seconds,
                                stderr,
                                expected: None,
                            });
                            res
                        })
                        .with_kind("cross"),
                    );
                }
            }
        }
    }

    let harness = cli.harness();
    if let Err(unmatched) = dhp_conform::cli::select(&harness, &cli.filters, &mut trials) {
        for f in unmatched {
            eprintln!(
                "dhp-conform: the filter {f:?}{} matches no assertion (`dhp-conform --list` lists them); nothing was run",
                if cli.exact { " (--exact)" } else { "" }
            );
        }
        for imp in under_test.iter().chain(&partners) {
            imp.shutdown();
        }
        return ExitCode::from(EXIT_USAGE);
    }
    let started = Instant::now();
    let started_at =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let conclusion = libtest_mimic::run(&harness, trials);
    let seconds = started.elapsed().as_secs_f64();
    for imp in under_test.iter().chain(&partners) {
        imp.shutdown();
    }
    let mut recs = records.snapshot();
    if let Some(e) = &expectations {
        for r in &mut recs {
            r.expected = e.expected_failure(r);
        }
    }
    let counts = Counts::of(&recs);
    let labels: Vec<(String, String)> = everyone.iter().map(|i| (i.label.clone(), i.describe())).collect();
    let surprises = expectations.as_ref().map(|e| e.surprises(&recs));
    match format {
        Format::Json => {
            println!("{}", report::json_summary(&recs, &labels, seconds));
            eprintln!("{}", counts.line());
        }
        Format::Markdown => {
            print!("{}", report::markdown::render(&recs, seconds, surprises.as_deref()));
            eprintln!("{} in {seconds:.1}s", counts.line());
        }
        Format::Pretty | Format::Terse => {
            let errored: Vec<&Record> = recs.iter().filter(|r| matches!(r.outcome, Outcome::Errored(_))).collect();
            if !errored.is_empty() {
                println!("errored (adapter exchange broke, no verdict):");
                for r in errored {
                    println!("  {} [{}]", r.assertion, dhp_markup::terminal(&r.implementation));
                }
            }
            println!("{} in {seconds:.1}s", counts.line());
        }
    }
    if let Some(s) = &surprises {
        if s.is_empty() {
            say(&format!(
                "every outcome as expected ({})",
                cli.expect.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
            ));
        } else {
            say("outcomes that differ from the expectations:");
            for (r, why) in s {
                say(&dhp_markup::terminal(&format!("  {} [{}]: {why}", r.assertion, r.implementation)));
            }
        }
    }
    if compare {
        let cols: Vec<String> = under_test.iter().map(|i| i.label.clone()).collect();
        say("");
        say(&report::compare_table(&recs, &rows, &cols));
    }
    let mut write_failed = false;
    let mut write = |what: &str, res: std::io::Result<()>| {
        if let Err(e) = res {
            eprintln!("dhp-conform: writing {what}: {e}");
            write_failed = true;
        }
    };
    if let Some(path) = &cli.junit {
        write(&path.display().to_string(), std::fs::write(path, report::junit(&recs)));
    }
    if let Some(dir) = &cli.html {
        let meta = report::html::RunMeta {
            title: "DHP 1.3 conformance report".into(),
            date: report::html::iso_utc(started_at),
            command: dhp_secrets::mask_secrets(&std::env::args().collect::<Vec<_>>().join(" ")),
            conform_commit: dhp_conform::locate::conform_commit(),
            seconds,
            expectations: cli.expect.as_ref().map(|p| p.display().to_string()),
        };
        let html = report::html::render(&recs, &labels, &meta);
        write(
            &dir.display().to_string(),
            report::html::write(dir, &html).map(|p| say(&format!("HTML report: {}", p.display()))),
        );
    }
    if let Some(dir) = &cli.badge {
        write(&dir.display().to_string(), report::badge::write_all(dir, &recs).map(drop));
    }
    if write_failed {
        return ExitCode::from(EXIT_USAGE);
    }
    let ok = match &surprises {
        Some(s) => s.is_empty(),
        None => !conclusion.has_failed() && counts.ok(),
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_output_carries_no_terminal_control_from_an_adapter() {
        let evil = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202E}x";
        for o in [Outcome::Failed(evil.into()), Outcome::Errored(evil.into())] {
            let text = match to_trial_result(&o) {
                Err(f) => f.message().unwrap_or_default().to_string(),
                Ok(_) => panic!("{o:?} is not a failure"),
            };
            assert!(!text.contains(['\u{1b}', '\u{7}', '\u{9b}', '\u{202E}']), "{o:?}: {text:?}");
            assert!(text.contains("]0;pwned"), "the text itself is kept: {text:?}");
        }
    }
}
