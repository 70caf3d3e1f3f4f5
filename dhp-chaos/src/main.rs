//! `dhp-chaos`: seeded SIGKILL/SIGSTOP fault injection against real DHP
//! worker and supervisor processes, with an invariant checker.

mod cli;

use clap::Parser;
use cli::args::{Cli, Cmd};

fn main() {
    let cli = Cli::parse();
    let code = match cli.cmd {
        Some(Cmd::Analyze { dir, timeline }) => cli::analyze::analyze(&dir, timeline),
        None => cli::run::run(cli.run),
    };
    std::process::exit(match code {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dhp-chaos: harness error: {e:#}");
            2
        }
    });
}
