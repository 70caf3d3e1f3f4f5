//! The replay command a failing round prints: this command line minus the
//! run-level flags, with `--seed` of that round and no password.

/// The command line minus run-level flags, for the replay command.
fn replay_args() -> Vec<String> {
    replay_args_of(std::env::args().skip(1))
}

fn replay_args_of(mut args: impl Iterator<Item = String>) -> Vec<String> {
    let drop_with_value = ["--seed", "--rounds", "--budget-minutes", "--out"];
    let drop_flag = ["--nightly", "--keep-passing", "--quiet", "-q", "--allow-known-reference-bugs"];
    let mut out = Vec::new();
    while let Some(a) = args.next() {
        if drop_with_value.contains(&a.as_str()) {
            args.next();
            continue;
        }
        if drop_with_value.iter().any(|d| a.starts_with(&format!("{d}="))) || drop_flag.contains(&a.as_str()) {
            continue;
        }
        // A store URL's password is not printed (write it back in to replay).
        let a = super::mask::mask_arg(&a);
        out.push(if a.contains(' ') { format!("'{a}'") } else { a });
    }
    out
}

pub fn replay_command(seed: u64) -> String {
    let release = std::env::current_exe().ok().is_some_and(|e| e.components().any(|c| c.as_os_str() == "release"));
    let mut s =
        format!("cargo run{} -p dhp-chaos -- --seed {seed} --rounds 1", if release { " --release" } else { "" });
    for a in replay_args() {
        s.push(' ');
        s.push_str(&a);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::replay_args_of;

    #[test]
    fn the_replay_command_drops_run_flags_and_never_prints_a_password() {
        let argv = ["--seed", "7", "--store", "postgres://dhp:s3cret@db:5432/dhp?schema=x", "--quiet", "--chunks", "9"];
        let out = replay_args_of(argv.iter().map(|a| a.to_string()));
        assert_eq!(out, ["--store", "postgres://dhp:***@db:5432/dhp?schema=x", "--chunks", "9"]);
    }
}
