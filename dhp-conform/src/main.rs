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
mod run;

use clap::Parser;
use dhp_conform::catalogue;
use dhp_conform::cli::{Cli, Format};
use dhp_conform::suite::{Level, Outcome};
use libtest_mimic::{Completion, Failed};
use std::process::ExitCode;

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
    run::run(&cli)
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
