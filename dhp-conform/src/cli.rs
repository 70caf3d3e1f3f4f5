//! The command line: what `dhp-conform --help` shows. Only the libtest
//! options that make sense for a conformance run are exposed (a filter,
//! `--exact`, `--skip`, `--test-threads`, `--quiet`, `--color`); they are
//! handed to the libtest-mimic harness that runs the assertions.

use crate::error::Error;
use clap::{Parser, ValueEnum};
use libtest_mimic::{Arguments, ColorSetting, FormatSetting, Trial};
use std::path::PathBuf;

/// `--level`: which levels of assertions run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LevelArg {
    /// The reference's ten assertions.
    Core,
    /// The ten plus the extended level.
    Extended,
    /// Only the cross-implementation level.
    Cross,
    /// Everything that applies (the cross level only runs with two or
    /// more implementations).
    All,
}

impl LevelArg {
    /// (core, extended, cross) wanted.
    pub fn levels(self) -> (bool, bool, bool) {
        match self {
            LevelArg::Core => (true, false, false),
            LevelArg::Extended => (true, true, false),
            LevelArg::Cross => (false, false, true),
            LevelArg::All => (true, true, true),
        }
    }
}

/// `--format`: what the run prints on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One line per assertion, then a summary (default).
    Pretty,
    /// One character per assertion.
    Terse,
    /// libtest JSON events, then one summary object (the last line).
    Json,
    /// Progress on stderr; on stdout a Markdown report for a CI step summary.
    Markdown,
}

/// `--color`: coloured output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Color {
    /// When stdout is a terminal.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

const ABOUT: &str = "Conformance runner for DHP 1.3 (Durable Handoff Protocol) implementations";

const LONG_ABOUT: &str = "Conformance runner for DHP 1.3 (Durable Handoff Protocol) implementations.

It judges an implementation through an adapter: a process that answers JSON-lines requests on \
stdin/stdout (dhp-conform/ADAPTERS.md, with JSON Schemas in spec/adapter/). Each assertion checks \
one protocol rule — the reference's ten (core), the extended level, and with two or more implementations \
the cross level, where one implementation continues another's store, log or bundle. Outcomes are \
passed, failed (a rule was broken), errored (the adapter exchange broke: no verdict) and skipped (an \
optional feature the adapter does not declare).";

const AFTER_HELP: &str = "IMPLEMENTATIONS:
  CMD is an adapter command line, run as `sh -c 'exec CMD'`, or one of:
    ours        dhp-core, through this binary in adapter mode (the default)
    reference   the Python reference dhp-protocol 1.3.0 ($DHP_PYTHON, else .venv/bin/python)

EXAMPLES:
  dhp-conform                                  all levels against ours
  dhp-conform --impl reference                 against the Python reference
  dhp-conform --impl 'node ./my-adapter.js' --cross ours
  dhp-conform --compare ours reference         + a Markdown table of both
  dhp-conform --store postgres://u:pw@host/db  ours on PostgreSQL (a schema per store)
  dhp-conform --compare ours --store /tmp --store postgres://host/db
                                               ours on both engines side by side
  dhp-conform --list                           the catalogue of assertion ids
  dhp-conform --explain fencing                one rule, why it matters, how it is checked
  dhp-conform fencing --exact                  one assertion
  dhp-conform --impl reference --expect dhp-conform/expectations/reference.json
  dhp-conform --html report/ --badge report/ --junit report/junit.xml
  dhp-conform --format markdown >> \"$GITHUB_STEP_SUMMARY\"

EXIT STATUS:
  0 nothing failed or errored (with --expect: every outcome as expected),
  1 something failed or errored (with --expect: an outcome changed),
  2 a bad command line — a FILTER that matches no assertion, a --junit,
    --html or --badge path that cannot be written — or an adapter that
    cannot start (nothing is run), or a report that could not be written.
  101 is only a crash of dhp-conform itself.";

/// Exit status of a run in which something failed or errored (with
/// `--expect`: an outcome changed).
pub const EXIT_FAILED: u8 = 1;
/// Exit status of a bad command line, an adapter that cannot start, or a
/// report that could not be written.
pub const EXIT_USAGE: u8 = 2;

/// `dir` exists or can be made, and a file can be created in it.
fn writable_dir(dir: &std::path::Path, flag: &'static str) -> Result<(), Error> {
    let failed = |doing| move |source| Error::ReportDir { flag, path: dir.to_path_buf(), doing, source };
    std::fs::create_dir_all(dir).map_err(failed(""))?;
    let probe = dir.join(format!(".dhp-conform-probe-{}", std::process::id()));
    std::fs::File::create(&probe).map_err(failed("cannot write in it: "))?;
    std::fs::remove_file(&probe).map_err(failed(""))
}

/// Refuse `--junit`, `--html` and `--badge` paths that cannot be written,
/// before any adapter starts: a report lost at the end of a long run is a
/// run lost. `--junit`'s directory must exist (it is not created).
pub fn check_report_paths(cli: &Cli) -> Result<(), Error> {
    if let Some(path) = &cli.junit {
        let bad = |problem| Error::ReportPath { flag: "--junit", path: path.clone(), problem };
        if path.is_dir() {
            return Err(bad("is a directory, want a file".into()));
        }
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        if !parent.is_dir() {
            return Err(bad(format!("no directory {}", parent.display())));
        }
        writable_dir(&parent, "--junit")?;
    }
    for (flag, dir) in [("--html", &cli.html), ("--badge", &cli.badge)] {
        if let Some(d) = dir {
            writable_dir(d, flag)?;
        }
    }
    Ok(())
}

/// The parsed command line. (`--help` prints the `about` texts set below,
/// not this comment.)
#[derive(Parser, Debug)]
#[command(name = "dhp-conform", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    /// Run only assertions whose name (or level, or implementation label)
    /// contains a FILTER (several: those matching any of them).
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Each FILTER must match a name exactly.
    #[arg(long)]
    pub exact: bool,
    /// Skip assertions whose name contains this (repeatable).
    #[arg(long, value_name = "FILTER")]
    pub skip: Vec<String>,

    /// Implementation under test (repeatable; with two or more, the
    /// cross-implementation level runs between every ordered pair).
    #[arg(long = "impl", value_name = "CMD", help_heading = "Implementations")]
    pub impls: Vec<String>,
    /// Also run the cross-implementation level between the
    /// implementation(s) under test and CMD, both ways.
    #[arg(long, value_name = "CMD", help_heading = "Implementations")]
    pub cross: Vec<String>,
    /// Run each CMD (no cross level) and print a Markdown table of
    /// assertions × implementations.
    #[arg(long, num_args = 1.., value_name = "CMD", conflicts_with_all = ["impls", "cross"], help_heading = "Implementations")]
    pub compare: Vec<String>,

    /// Where each assertion's stores are created (repeatable: each
    /// implementation runs once per location, labelled `<impl>@sqlite` /
    /// `<impl>@postgres`, and the cross level runs between them): a
    /// directory (fresh subdirectories; default: the system temp dir), or
    /// a `postgres://` base URL without `schema=` (a fresh schema per
    /// store, dropped afterwards unless --keep).
    #[arg(long, value_name = "DIR|URL", help_heading = "Implementations")]
    pub store: Vec<String>,

    /// Which levels to run or list.
    #[arg(long, value_enum, default_value = "all")]
    pub level: LevelArg,
    /// Seconds an adapter may take to answer one request before the
    /// assertion is reported as errored.
    #[arg(long, default_value_t = 20.0, value_name = "SECS")]
    pub timeout: f64,
    /// Assertions run at once (default 1: several are timing-sensitive).
    #[arg(long, value_name = "N")]
    pub test_threads: Option<usize>,

    /// List the assertion catalogue (id, level, rule) and exit; with
    /// `--format json` or `markdown` for tools and docs.
    #[arg(long, help_heading = "Catalogue")]
    pub list: bool,
    /// Show one assertion: the rule, why it matters, how it is checked,
    /// and the mutants that prove the check can fail.
    #[arg(long, value_name = "ID", conflicts_with = "list", help_heading = "Catalogue")]
    pub explain: Option<String>,

    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "pretty", help_heading = "Reports")]
    pub format: Format,
    /// Short for `--format terse`.
    #[arg(short, long, help_heading = "Reports")]
    pub quiet: bool,
    /// Colour the progress output.
    #[arg(long, value_enum, default_value = "auto", help_heading = "Reports")]
    pub color: Color,
    /// Write a JUnit XML report here.
    #[arg(long, value_name = "PATH", help_heading = "Reports")]
    pub junit: Option<PathBuf>,
    /// Write an HTML report (index.html: assertions × implementations,
    /// failure messages, adapter stderr) into DIR.
    #[arg(long, value_name = "DIR", help_heading = "Reports")]
    pub html: Option<PathBuf>,
    /// Write a shields.io endpoint badge, DIR/<label>.json, per implementation.
    #[arg(long, value_name = "DIR", help_heading = "Reports")]
    pub badge: Option<PathBuf>,
    /// Known outcomes (JSON, see dhp-conform/expectations/): the run
    /// fails only where an outcome differs from what is pinned there.
    #[arg(long, value_name = "FILE", help_heading = "Reports")]
    pub expect: Option<PathBuf>,

    /// Copy adapter stderr to this process's stderr.
    #[arg(long, help_heading = "Debugging")]
    pub adapter_stderr: bool,
    /// Keep each assertion's temporary directory (and PostgreSQL schemas).
    #[arg(long, help_heading = "Debugging")]
    pub keep: bool,

    /// `--explore` and its settings (src/explore/args.rs).
    #[command(flatten)]
    pub explore: crate::explore::args::ExploreArgs,
}

impl Cli {
    /// The output format in force: `--quiet` turns the default `pretty`
    /// into `terse`.
    pub fn format(&self) -> Format {
        if self.quiet && self.format == Format::Pretty {
            Format::Terse
        } else {
            self.format
        }
    }

    /// The harness arguments.
    pub fn harness(&self) -> Arguments {
        let format = match self.format() {
            Format::Pretty => FormatSetting::Pretty,
            Format::Terse => FormatSetting::Terse,
            Format::Json => FormatSetting::Json,
            // progress goes to stderr; stdout is the report
            Format::Markdown => FormatSetting::Terse,
        };
        Arguments {
            // the FILTERs are applied by `select` (the harness takes one)
            filter: None,
            exact: self.exact,
            skip: self.skip.clone(),
            test_threads: Some(self.test_threads.unwrap_or(1).max(1)),
            format: Some(format),
            color: Some(match self.color {
                Color::Auto => ColorSetting::Auto,
                Color::Always => ColorSetting::Always,
                Color::Never => ColorSetting::Never,
            }),
            logfile: (self.format() == Format::Markdown).then(progress_file),
            ..Arguments::default()
        }
    }
}

/// The trials the FILTERs name (every one without FILTERs): those that
/// any FILTER (with `--exact` and `--skip` as given) lets through. Err: the
/// FILTERs that match no assertion, a usage error.
pub fn select(harness: &Arguments, filters: &[String], trials: &mut Vec<Trial>) -> Result<(), Vec<String>> {
    if filters.is_empty() {
        return Ok(());
    }
    let each: Vec<Arguments> =
        filters.iter().map(|f| Arguments { filter: Some(f.clone()), ..harness.clone() }).collect();
    let unmatched: Vec<String> = filters
        .iter()
        .zip(&each)
        .filter(|(_, a)| trials.iter().all(|t| a.is_filtered_out(t)))
        .map(|(f, _)| f.clone())
        .collect();
    if !unmatched.is_empty() {
        return Err(unmatched);
    }
    trials.retain(|t| each.iter().any(|a| !a.is_filtered_out(t)));
    Ok(())
}

/// Where the progress goes with `--format markdown`: stderr, or nowhere if
/// it cannot be opened (the harness would panic on a logfile it cannot create).
fn progress_file() -> String {
    let usable = std::fs::OpenOptions::new().append(true).open("/dev/stderr").is_ok();
    if usable { "/dev/stderr" } else { "/dev/null" }.to_string()
}
