//! One run of the suite, after the command line was parsed: the
//! implementations are started ([`setup`]), the trials built (one per
//! assertion and implementation, the explorer's, one per cross pair),
//! run by libtest-mimic, and the reports written ([`finish`]).

use super::{resolve, result_event, to_trial_result};
use dhp_conform::cli::{Cli, Format, EXIT_FAILED, EXIT_USAGE};
use dhp_conform::expect::Expectations;
use dhp_conform::report::{self, Counts, Record, Records};
use dhp_conform::stores::StoreBase;
use dhp_conform::suite::{self, Impl, Level, Options, Outcome};
use dhp_conform::{assertions, catalogue};
use libtest_mimic::{Conclusion, Trial};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// What a run works with once its implementations have started.
pub(super) struct Setup {
    opts: Arc<Options>,
    /// `--compare`: a table of the implementations side by side.
    compare: bool,
    format: Format,
    under_test: Vec<Arc<Impl>>,
    /// `--cross` partners.
    partners: Vec<Arc<Impl>>,
    expectations: Option<Expectations>,
}

impl Setup {
    /// Every implementation started.
    fn everyone(&self) -> impl Iterator<Item = &Arc<Impl>> {
        self.under_test.iter().chain(&self.partners)
    }

    /// A progress line: on stderr when stdout carries the report (JSON, Markdown).
    fn say(&self, s: &str) {
        if matches!(self.format, Format::Json | Format::Markdown) {
            eprintln!("{s}")
        } else {
            println!("{s}")
        }
    }
}

/// Run the suite as `cli` says.
pub(super) fn run(cli: &Cli) -> ExitCode {
    let s = match setup(cli) {
        Ok(s) => s,
        Err(code) => return code,
    };
    for imp in s.everyone() {
        s.say(&format!("implementation {}", imp.describe()));
    }
    let records = Arc::new(Records::default());
    let (mut trials, rows) = single_trials(cli, &s, &records);
    if cli.explore.explore {
        match explore_trials(cli, &s, &records) {
            Ok(t) => trials.extend(t),
            Err(code) => return code,
        }
    }
    let everyone: Vec<Arc<Impl>> = s.everyone().cloned().collect();
    trials.extend(cross_trials(cli, &s, &everyone, &records));
    let (conclusion, seconds, started_at) = match run_trials(cli, &s, trials) {
        Ok(r) => r,
        Err(code) => return code,
    };
    finish(cli, &s, &records, &rows, (conclusion, seconds, started_at))
}

/// Check the flags, resolve every implementation word and start them all.
fn setup(cli: &Cli) -> Result<Setup, ExitCode> {
    let timeout = match std::time::Duration::try_from_secs_f64(cli.timeout) {
        Ok(t) if t > std::time::Duration::ZERO && cli.timeout <= 86_400.0 => t,
        _ => {
            eprintln!("dhp-conform: --timeout must be in (0, 86400] seconds, got {}", cli.timeout);
            return Err(ExitCode::from(2));
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
                    return Err(ExitCode::from(2));
                }
            }
        }
    };
    if let Err(e) = dhp_conform::cli::check_report_paths(cli) {
        eprintln!("dhp-conform: {e} (nothing was run)");
        return Err(ExitCode::from(EXIT_USAGE));
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

    // Every --impl/--cross/--compare word is resolved before any adapter starts.
    let (mut r_under, mut r_partners) = (Vec::new(), Vec::new());
    for (list, out) in [(&specs, &mut r_under), (&cli.cross, &mut r_partners)] {
        for s in list {
            match resolve(s) {
                Ok(r) => out.push(r),
                Err(e) => {
                    eprintln!("dhp-conform: {e}");
                    return Err(ExitCode::from(2));
                }
            }
        }
    }
    let (under_test, partners) = start(cli, &opts, r_under, r_partners)?;
    Ok(Setup { opts, compare, format: cli.format(), under_test, partners, expectations })
}

type Resolved = Vec<(String, Option<String>)>;
/// Adapters started, shared by the trials.
type Started = Vec<Arc<Impl>>;

/// Start the adapters (once per `--store` each); none may fail to start.
fn start(
    cli: &Cli,
    opts: &Arc<Options>,
    r_under: Resolved,
    r_partners: Resolved,
) -> Result<(Started, Started), ExitCode> {
    if let Err(e) = dhp_conform::pgroup::kill_all_on_signal() {
        eprintln!("dhp-conform: cannot install signal handlers: {e}");
        return Err(ExitCode::from(2));
    }
    let mut stores = Vec::new();
    for s in &cli.store {
        match StoreBase::parse(s) {
            Ok(b) => stores.push(Arc::new(b)),
            Err(e) => {
                eprintln!("dhp-conform: {e}");
                return Err(ExitCode::from(2));
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
                let mut imp = Impl::connect_on(&cmd, label.as_deref(), st.clone(), opts);
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
        return Err(ExitCode::from(2));
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
    Ok((under_test, partners))
}

/// One trial per single-implementation assertion the levels select and
/// implementation under test; and the rows of `--compare`'s table.
fn single_trials(cli: &Cli, s: &Setup, records: &Arc<Records>) -> (Vec<Trial>, Vec<(String, Level)>) {
    let json_events = matches!(s.format, Format::Json);
    let (core, extended, cross) = cli.level.levels();
    let multi = s.under_test.len() > 1;
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
        for imp in &s.under_test {
            let (imp, records, opts) = (imp.clone(), records.clone(), s.opts.clone());
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
    (trials, rows)
}

/// `--explore`: one trial per implementation under test.
fn explore_trials(cli: &Cli, s: &Setup, records: &Arc<Records>) -> Result<Vec<Trial>, ExitCode> {
    let mut trials = Vec::new();
    for imp in &s.under_test {
        let t = super::explore_main::trial(
            imp.clone(),
            &cli.explore,
            cli.expect.as_deref(),
            s.opts.clone(),
            records.clone(),
        );
        match t {
            Ok(t) => trials.push(t.with_kind("explore")),
            Err(e) => {
                eprintln!("dhp-conform: {e}");
                return Err(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    Ok(trials)
}

/// One trial per cross assertion and ordered pair of implementations.
fn cross_trials(cli: &Cli, s: &Setup, everyone: &[Arc<Impl>], records: &Arc<Records>) -> Vec<Trial> {
    let mut trials = Vec::new();
    let json_events = matches!(s.format, Format::Json);
    let (_, _, cross) = cli.level.levels();
    if cross && !s.compare && !cli.explore.explore && everyone.len() > 1 {
        for x in assertions::cross::all() {
            for a in everyone {
                for b in everyone {
                    if Arc::ptr_eq(a, b) {
                        continue;
                    }
                    let pair = format!("{}->{}", a.label, b.label);
                    let (a, b, records, opts) = (a.clone(), b.clone(), records.clone(), s.opts.clone());
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
    trials
}

/// Apply the filters and run the trials; the adapters are shut down after.
fn run_trials(cli: &Cli, s: &Setup, mut trials: Vec<Trial>) -> Result<(Conclusion, f64, f64), ExitCode> {
    let harness = cli.harness();
    if let Err(unmatched) = dhp_conform::cli::select(&harness, &cli.filters, &mut trials) {
        for f in unmatched {
            eprintln!(
                "dhp-conform: the filter {f:?}{} matches no assertion (`dhp-conform --list` lists them); nothing was run",
                if cli.exact { " (--exact)" } else { "" }
            );
        }
        for imp in s.everyone() {
            imp.shutdown();
        }
        return Err(ExitCode::from(EXIT_USAGE));
    }
    let started = Instant::now();
    let started_at =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let conclusion = libtest_mimic::run(&harness, trials);
    let seconds = started.elapsed().as_secs_f64();
    for imp in s.everyone() {
        imp.shutdown();
    }
    Ok((conclusion, seconds, started_at))
}

/// Print the summary, write the reports, and say how the run ends.
fn finish(
    cli: &Cli,
    s: &Setup,
    records: &Records,
    rows: &[(String, Level)],
    (conclusion, seconds, started_at): (Conclusion, f64, f64),
) -> ExitCode {
    let mut recs = records.snapshot();
    if let Some(e) = &s.expectations {
        for r in &mut recs {
            r.expected = e.expected_failure(r);
        }
    }
    let counts = Counts::of(&recs);
    let labels: Vec<(String, String)> = s.everyone().map(|i| (i.label.clone(), i.describe())).collect();
    let surprises = s.expectations.as_ref().map(|e| e.surprises(&recs));
    match s.format {
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
    if let Some(sur) = &surprises {
        if sur.is_empty() {
            s.say(&format!(
                "every outcome as expected ({})",
                cli.expect.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
            ));
        } else {
            s.say("outcomes that differ from the expectations:");
            for (r, why) in sur {
                s.say(&dhp_markup::terminal(&format!("  {} [{}]: {why}", r.assertion, r.implementation)));
            }
        }
    }
    if s.compare {
        let cols: Vec<String> = s.under_test.iter().map(|i| i.label.clone()).collect();
        s.say("");
        s.say(&report::compare_table(&recs, rows, &cols));
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
            report::html::write(dir, &html).map(|p| s.say(&format!("HTML report: {}", p.display()))),
        );
    }
    if let Some(dir) = &cli.badge {
        write(&dir.display().to_string(), report::badge::write_all(dir, &recs).map(drop));
    }
    if write_failed {
        return ExitCode::from(EXIT_USAGE);
    }
    let ok = match &surprises {
        Some(sur) => sur.is_empty(),
        None => !conclusion.has_failed() && counts.ok(),
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    }
}
