//! `dhp-conform`: run the DHP conformance assertions against one or more
//! implementations through their adapters.
//!
//! ```text
//! cargo run -p dhp-conform                         # our implementation
//! cargo run -p dhp-conform -- --impl reference     # the Python reference
//! cargo run -p dhp-conform -- --impl 'node my-adapter.js'
//! cargo run -p dhp-conform -- --cross reference    # + ours→reference, reference→ours
//! cargo run -p dhp-conform -- --compare ours reference
//! cargo run -p dhp-conform -- --list | fencing | --format json | --junit out.xml
//! ```
//!
//! Exit status: 0 when nothing failed or errored, 101 otherwise (libtest's
//! convention), 2 for a bad command line or an adapter that cannot start.

use clap::{Parser, ValueEnum};
use dhp_conform::assertions;
use dhp_conform::report::{self, Counts, Record, Records};
use dhp_conform::suite::{self, Impl, Level, Options, Outcome};
use libtest_mimic::{Completion, Failed, FormatSetting, Trial};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LevelArg {
    /// The reference's ten assertions.
    Core,
    /// The ten plus the extended level.
    Extended,
    /// Only the cross-implementation level.
    Cross,
    /// Everything that applies.
    All,
}

#[derive(Parser)]
#[command(
    name = "dhp-conform",
    version,
    about = "Conformance runner for DHP 1.3 implementations (adapter protocol: dhp-conform/ADAPTERS.md)",
    after_help = "CMD is an adapter command line (run with `sh -c 'exec CMD'`), or `ours` (dhp-core, through this \
binary in adapter mode) or `reference` (the Python reference, dhp-protocol 1.3.0, from the venv made by \
scripts/setup.sh). A FILTER matches assertion names and kinds, e.g. `fencing`, `core`, `reference`. \
Exit status: 0 all passed or skipped, 101 something failed or errored, 2 usage or an adapter that \
cannot start (nothing is run)."
)]
struct Cli {
    /// Implementation under test (repeatable; with two or more, the
    /// cross-implementation level runs between every ordered pair).
    #[arg(long = "impl", value_name = "CMD")]
    impls: Vec<String>,
    /// Also run the cross-implementation level between the implementation(s)
    /// under test and CMD, both ways.
    #[arg(long, value_name = "CMD")]
    cross: Vec<String>,
    /// Run each CMD and print a Markdown table of assertions × implementations.
    #[arg(long, num_args = 1.., value_name = "CMD", conflicts_with_all = ["impls", "cross"])]
    compare: Vec<String>,
    /// Which levels to run.
    #[arg(long, value_enum, default_value = "all")]
    level: LevelArg,
    /// Seconds an adapter may take to answer one request before the
    /// assertion is reported as errored.
    #[arg(long, default_value_t = 20.0, value_name = "SECS")]
    timeout: f64,
    /// Write a JUnit XML report here.
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Copy adapter stderr to this process's stderr.
    #[arg(long)]
    adapter_stderr: bool,
    /// Keep each assertion's temporary directory.
    #[arg(long)]
    keep: bool,
    #[command(flatten)]
    test: libtest_mimic::Arguments,
}

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
            // This very binary, in adapter mode: nothing else to build.
            let exe = std::env::current_exe().map_err(|e| format!("locating dhp-conform: {e}"))?;
            Ok((format!("{} {ADAPTER_MODE}", sh_quote(&exe.to_string_lossy())), Some("ours".into())))
        }
        "reference" => {
            let py = std::env::var_os("DHP_PYTHON")
                .map(PathBuf::from)
                .unwrap_or_else(|| dhp_core::testing::repo_root().join(".venv/bin/python"));
            if !py.exists() {
                return Err(format!(
                    "no reference interpreter at {}: run `bash scripts/setup.sh` (or set DHP_PYTHON)",
                    py.display()
                ));
            }
            let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/python_ref.py");
            Ok((format!("{} {}", sh_quote(&py.to_string_lossy()), sh_quote(&script.to_string_lossy())), Some("reference".into())))
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

fn levels(l: LevelArg) -> (bool, bool, bool) {
    match l {
        LevelArg::Core => (true, false, false),
        LevelArg::Extended => (true, true, false),
        LevelArg::Cross => (false, false, true),
        LevelArg::All => (true, true, true),
    }
}

fn to_trial_result(o: &Outcome) -> Result<Completion, Failed> {
    match o {
        Outcome::Passed => Ok(Completion::Completed),
        Outcome::Skipped(r) => Ok(Completion::ignored_with(r)),
        Outcome::Failed(m) => Err(m.clone().into()),
        Outcome::Errored(m) => Err(format!("ERRORED (no verdict: the adapter exchange broke): {m}").into()),
    }
}

/// First argument that turns this binary into our adapter (`--impl ours`).
const ADAPTER_MODE: &str = "__adapter";

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some(ADAPTER_MODE) {
        let code = dhp_conform::rs_adapter::run(std::env::args().skip(2));
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let mut cli = Cli::parse();
    let timeout = match dhp_core::config::positive_duration("--timeout", cli.timeout, 86_400.0) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("dhp-conform: {e}");
            return ExitCode::from(2);
        }
    };
    let opts = Arc::new(Options { timeout, echo_stderr: cli.adapter_stderr, keep: cli.keep });
    let compare = !cli.compare.is_empty();
    let specs: Vec<String> = if compare {
        cli.compare.clone()
    } else if cli.impls.is_empty() {
        vec!["ours".into()]
    } else {
        cli.impls.clone()
    };
    let json_out = cli.test.format == Some(FormatSetting::Json);
    let say = |s: &str| if json_out { eprintln!("{s}") } else { println!("{s}") };

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
    let connect = |list: Vec<(String, Option<String>)>| -> Vec<Impl> {
        list.into_iter().map(|(cmd, label)| Impl::connect(&cmd, label.as_deref(), &opts)).collect()
    };
    let mut under_test = connect(r_under);
    let mut partners = connect(r_partners);
    // An adapter that cannot even start would error every assertion with
    // the same message: say it once and stop.
    if !cli.test.list {
        let dead: Vec<&Impl> = under_test.iter().chain(&partners).filter(|i| i.hello.is_err()).collect();
        if !dead.is_empty() {
            for imp in &dead {
                if let Err(e) = &imp.hello {
                    eprintln!("dhp-conform: the adapter `{}` did not start: {e}", imp.command);
                }
            }
            eprintln!("dhp-conform: nothing was run");
            for imp in under_test.iter().chain(&partners) {
                imp.shutdown();
            }
            return ExitCode::from(2);
        }
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
    if !cli.test.list {
        for imp in under_test.iter().chain(&partners) {
            say(&format!("implementation {}", imp.describe()));
        }
    }

    let (core, extended, cross) = levels(cli.level);
    let records = Arc::new(Records::default());
    let multi = under_test.len() > 1;
    let mut trials = Vec::new();
    let mut rows: Vec<(String, Level)> = Vec::new();
    for a in assertions::all() {
        let wanted = match a.level {
            Level::Core => core,
            Level::Extended => extended,
            Level::Cross => cross,
        };
        if !wanted {
            continue;
        }
        rows.push((a.name.to_string(), a.level));
        for imp in &under_test {
            let (imp, records, opts) = (imp.clone(), records.clone(), opts.clone());
            let kind = if multi { format!("{}/{}", imp.label, a.level.as_str()) } else { a.level.as_str().to_string() };
            trials.push(
                Trial::ignorable_test(a.name, move || {
                    let (outcome, seconds) = suite::run_one(&imp, &a, &opts);
                    let res = to_trial_result(&outcome);
                    records.push(Record { implementation: imp.label.clone(), assertion: a.name.into(), level: a.level, outcome, seconds });
                    res
                })
                .with_kind(kind),
            );
        }
    }
    let everyone: Vec<Arc<Impl>> = under_test.iter().chain(&partners).cloned().collect();
    if cross && !compare && everyone.len() > 1 {
        for x in assertions::cross::all() {
            for a in &everyone {
                for b in &everyone {
                    if Arc::ptr_eq(a, b) {
                        continue;
                    }
                    let pair = format!("{}->{}", a.label, b.label);
                    let (a, b, records, opts) = (a.clone(), b.clone(), records.clone(), opts.clone());
                    trials.push(
                        Trial::ignorable_test(format!("{}:{pair}", x.name), move || {
                            let (outcome, seconds) = suite::run_cross(&a, &b, &x, &opts);
                            let res = to_trial_result(&outcome);
                            records.push(Record { implementation: pair, assertion: x.name.into(), level: Level::Cross, outcome, seconds });
                            res
                        })
                        .with_kind("cross"),
                    );
                }
            }
        }
    }

    // Timing-sensitive assertions are judged one at a time unless asked.
    cli.test.test_threads.get_or_insert(1);
    let started = Instant::now();
    let conclusion = libtest_mimic::run(&cli.test, trials);
    let seconds = started.elapsed().as_secs_f64();
    for imp in under_test.iter().chain(&partners) {
        imp.shutdown();
    }
    if cli.test.list {
        return ExitCode::SUCCESS;
    }
    let recs = records.snapshot();
    let counts = Counts::of(&recs);
    if json_out {
        let labels: Vec<(String, String)> = everyone.iter().map(|i| (i.label.clone(), i.describe())).collect();
        println!("{}", report::json_summary(&recs, &labels, seconds));
        eprintln!("{}", counts.line());
    } else {
        let errored: Vec<&Record> = recs.iter().filter(|r| matches!(r.outcome, Outcome::Errored(_))).collect();
        if !errored.is_empty() {
            println!("errored (adapter exchange broke, no verdict):");
            for r in errored {
                println!("  {} [{}]", r.assertion, r.implementation);
            }
        }
        println!("{} in {seconds:.1}s", counts.line());
    }
    if compare {
        let cols: Vec<String> = under_test.iter().map(|i| i.label.clone()).collect();
        say("");
        say(&report::compare_table(&recs, &rows, &cols));
    }
    if let Some(path) = &cli.junit {
        if let Err(e) = std::fs::write(path, report::junit(&recs)) {
            eprintln!("dhp-conform: writing {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if conclusion.has_failed() || !counts.ok() {
        ExitCode::from(101)
    } else {
        ExitCode::SUCCESS
    }
}
