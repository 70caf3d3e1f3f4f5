//! `dhp work …` parsed by a command line that knows only `work`.
//!
//! clap's derive builds the arguments of every subcommand before it
//! parses one, and each subcommand's builder is code of its own: a worker
//! would touch the builders of the MCP, A2A, dashboard and transport
//! servers it never runs — program text that counts in a worker's peak
//! RSS (benches/RESULTS.md, issue 49 item 5). A `work` command line is
//! parsed here with the same global flags and the same [`WorkArgs`]; when
//! that fails (help, a bad flag) the full command line parses it again, so
//! every message and exit is the full one's. A worker also runs with a
//! single malloc arena ([`one_malloc_arena`]).

use crate::work::WorkArgs;
use crate::{Cli, Cmd, LogLevel};
use clap::{Parser, Subcommand};
use std::ffi::OsString;

#[derive(Parser)]
#[command(name = "dhp")]
struct WorkCli {
    #[arg(long, global = true)]
    json: bool,
    #[arg(long, global = true, value_enum)]
    log: Option<LogLevel>,
    #[command(subcommand)]
    cmd: WorkOnly,
}

#[derive(Subcommand)]
enum WorkOnly {
    Work(WorkArgs),
}

/// The subcommand a command line names: its first word that is neither a
/// flag nor `--log`'s value.
fn subcommand(args: &[OsString]) -> Option<&OsString> {
    let mut words = args.iter().skip(1);
    while let Some(w) = words.next() {
        if w == "--log" {
            words.next();
        } else if !w.to_string_lossy().starts_with('-') {
            return Some(w);
        }
    }
    None
}

/// `args` parsed as `dhp work …`, when it is one and parses; else `None`
/// (the full command line then parses it). A worker gets one malloc arena
/// ([`one_malloc_arena`]).
pub fn parse(args: &[OsString]) -> Option<Cli> {
    if subcommand(args)? != "work" {
        return None;
    }
    one_malloc_arena();
    let w = WorkCli::try_parse_from(args).ok()?;
    let WorkOnly::Work(a) = w.cmd;
    Some(Cli { json: w.json, log: w.log, cmd: Cmd::Work(a) })
}

/// glibc gives each thread that allocates an arena of its own, each with
/// pages of its own; a worker's threads (heartbeat, liveness keeper,
/// deadline watch, connection attempts) mostly wait, so one shared arena
/// costs no contention and ≈ 0.3 MB of peak RSS less (benches/RESULTS.md).
/// Called before the worker starts any thread.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn one_malloc_arena() {
    // SAFETY: mallopt only sets an allocator parameter; no pointer is
    // passed, and an unknown or refused setting is ignored (returns 0).
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_malloc_arena() {}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    const HID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_work_line_parses_here_as_the_full_command_line_parses_it() {
        for line in [
            format!("dhp work /r --runner w1 claim {HID}"),
            format!("dhp --json work /r --runner w1 recover {HID} --pace 0.5"),
            format!("dhp --log info work /r --runner w1 claim {HID} --json --stop-after 3"),
            format!("dhp work /r --runner w1 claim {HID} --ship-to h:1 --ship-mode async --ship-buffer /b/"),
        ] {
            let args = words(&line);
            let here = parse(&args).unwrap_or_else(|| panic!("parsed here: {line}"));
            let full = Cli::try_parse_from(&args).unwrap();
            assert_eq!((here.json, here.log.map(LogLevel::directive)), (full.json, full.log.map(LogLevel::directive)));
            let (Cmd::Work(a), Cmd::Work(b)) = (here.cmd, full.cmd) else { panic!("not work: {line}") };
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{line}");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_full_command_line() {
        for line in [
            "dhp status /r".to_string(),
            "dhp --log work status /r".to_string(),
            "dhp work --help".to_string(),
            format!("dhp work /r --runner w1 claim {HID} --bogus"),
            format!("dhp work /r --runner w1 fetch {HID}"),
            "dhp".to_string(),
        ] {
            assert!(parse(&words(&line)).is_none(), "{line}");
        }
    }
}
