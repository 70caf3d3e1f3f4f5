//! `dhp-chaos`: seeded SIGKILL/SIGSTOP fault injection against real DHP
//! worker and supervisor processes, with an invariant checker.

mod cli;

use clap::Parser;
use cli::args::{Cli, Cmd, DbAction};

fn main() {
    let cli = Cli::parse();
    // every child, namespace, mount and cluster of the run goes on a signal or a panic too
    if let Err(e) = dhp_chaos::teardown::install() {
        eprintln!("dhp-chaos: harness error: installing the signal handlers: {e}");
        std::process::exit(2);
    }
    let code = match cli.cmd {
        Some(Cmd::List { format }) => cli::list(&format),
        Some(Cmd::Analyze { dir, timeline }) => cli::analyze::analyze(&dir, timeline),
        Some(Cmd::Audit { action, store }) => cli::audit::audit(&action, &store),
        Some(Cmd::Shrink { dir, replays, tries, budget_minutes, budget_rounds }) => {
            cli::shrink::shrink(&dir, replays, tries, budget_minutes, budget_rounds)
        }
        Some(Cmd::Ledger { dirs, ledger, label, night, thresholds, regressions }) => {
            cli::ledger::ledger(cli::ledger::LedgerArgs { dirs, ledger, label, night, thresholds, regressions })
        }
        Some(Cmd::Db { action }) => match action {
            DbAction::Start { kind, async_, watch } => cli::db::start(&kind, async_, watch),
            DbAction::Step { kind, dir, step, node } => cli::db::step(&kind, &dir, &step, node.as_deref()),
            DbAction::Stop { kind, dir } => cli::db::stop(&kind, &dir),
        },
        Some(Cmd::DbWatch { pid, kind, dir }) => {
            if let Some(k) = dhp_chaos::db::Kind::parse(&kind) {
                dhp_chaos::db::watch(pid, k, &dir);
            }
            Ok(0)
        }
        None => cli::run::run(cli.run),
    };
    dhp_chaos::teardown::exit(match code {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dhp-chaos: harness error: {e:#}");
            2
        }
    });
}
