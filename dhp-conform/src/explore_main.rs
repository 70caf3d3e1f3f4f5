//! The binary's side of `--explore` and `dhp-conform replay`: trials that
//! push the explore rows, and the replay command.

use clap::Parser;
use dhp_conform::explore::{self, args::ReplayCli};
use dhp_conform::report::{Record, Records};
use dhp_conform::suite::{Impl, Options};
use libtest_mimic::{Failed, Trial};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// The divergences `--expect FILE` pins for `label` (none without a file).
fn pinned(expect: Option<&Path>, label: &str) -> Vec<(String, String)> {
    let Some(path) = expect else { return Vec::new() };
    // Expectations::load already refused an unreadable or malformed file.
    let v = std::fs::read(path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    explore::args::pinned(&v, label)
}

/// One trial per implementation: explore it, push one row per family.
pub fn trial(
    imp: Arc<Impl>,
    args: &explore::args::ExploreArgs,
    expect: Option<&Path>,
    opts: Arc<Options>,
    records: Arc<Records>,
) -> Result<Trial, String> {
    let cfg = args.config(pinned(expect, &imp.label))?;
    let name = format!("explore:{}", imp.label);
    Ok(Trial::test(name, move || {
        let rows: Vec<Record> = explore::records(&imp, &cfg, &opts);
        let bad: Vec<String> = rows
            .iter()
            .filter(|r| r.is_bad() && r.assertion != explore::PINNED_ID)
            .map(|r| format!("{}: {}", r.assertion, r.outcome.message().unwrap_or_default()))
            .collect();
        for r in rows {
            records.push(r);
        }
        if bad.is_empty() {
            Ok(())
        } else {
            Err(Failed::from(bad.join("\n")))
        }
    }))
}

/// `dhp-conform replay FILE [--impl CMD] [--runs N]`: exit 1 while the
/// divergence reproduces, 0 once it does not, 2 for a usage error.
pub fn replay(resolve: impl Fn(&str) -> Result<(String, Option<String>), String>) -> ExitCode {
    let cli = ReplayCli::parse_from(std::env::args().skip(1));
    let file = match explore::replay::load(&cli.file) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("dhp-conform replay: {e}");
            return ExitCode::from(2);
        }
    };
    let timeout = match std::time::Duration::try_from_secs_f64(cli.timeout) {
        Ok(t) if t > std::time::Duration::ZERO && cli.timeout <= 86_400.0 => t,
        _ => {
            eprintln!("dhp-conform replay: --timeout must be in (0, 86400] seconds, got {}", cli.timeout);
            return ExitCode::from(2);
        }
    };
    let (cmd, label) = match resolve(&cli.imp) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("dhp-conform replay: {e}");
            return ExitCode::from(2);
        }
    };
    let opts = Options { timeout, ..Options::default() };
    let imp = Impl::connect(&cmd, label.as_deref(), &opts);
    if let Err(e) = &imp.hello {
        eprintln!("dhp-conform replay: the adapter `{cmd}` did not start: {e}");
        return ExitCode::from(2);
    }
    println!(
        "replaying {} ({} steps, found on {}, seed {}):",
        cli.file.display(),
        file.minimal.steps.len(),
        file.implementation,
        file.seed
    );
    print!("{}", explore::describe(&file.minimal, Some(&file.divergence)));
    println!(
        "recorded: after step {}: {} — model {}, implementation {}\nrule: {}",
        file.divergence.step + 1,
        file.divergence.what,
        file.divergence.want,
        file.divergence.got,
        file.divergence.rule
    );
    let seen = match explore::replay::run(&imp, &file, cli.runs.max(1), &opts) {
        Ok(s) => s,
        Err(e) => {
            imp.shutdown();
            eprintln!("dhp-conform replay: no verdict: {e}");
            return ExitCode::from(1);
        }
    };
    imp.shutdown();
    let same = seen.iter().filter(|d| d.as_ref().is_some_and(|d| d.same_as(&file.divergence))).count();
    for (k, d) in seen.iter().enumerate() {
        match d {
            Some(d) => println!(
                "run {}: after step {}: {} — model {}, implementation {}",
                k + 1,
                d.step + 1,
                d.what,
                d.want,
                d.got
            ),
            None => println!("run {}: no divergence", k + 1),
        }
    }
    println!("{} {same}/{} runs show the recorded divergence", imp.label, seen.len());
    if seen.iter().any(Option::is_some) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
