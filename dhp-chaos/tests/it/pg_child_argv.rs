//! The store's password is never on a child's command line: dhp-chaos
//! hands its workers, supervisors and `dhp dispatch` the `--store` URL
//! without the password and the password as `PGPASSWORD` in their
//! environment. A process's argv is world-readable (`/proc/PID/cmdline`,
//! `ps`); its environment is not. Checked on the live processes of a short
//! PostgreSQL round while they work.
use crate::common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// (pid, cmdline with NULs as spaces) of every process we can read.
fn processes() -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(b) = std::fs::read(e.path().join("cmdline")) {
            out.push((pid, String::from_utf8_lossy(&b).replace('\0', " ")));
        }
    }
    out
}

/// The parent of `pid` (`/proc/PID/stat`'s fourth field, after the command's parentheses).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// Is `pid` a descendant of `root`? (Other tests run dhp-chaos with a URL
/// in its argv at the same time: only this round's children count.)
fn descends_from(pid: u32, root: u32) -> bool {
    let mut p = pid;
    for _ in 0..64 {
        match parent(p) {
            Some(q) if q == root => return true,
            Some(q) if q > 1 => p = q,
            _ => return false,
        }
    }
    false
}

#[test]
fn no_child_of_a_postgres_round_has_the_password_in_its_argv() {
    let url = dhp_kit::pg_url();
    let (_, rest) = url.split_once("://").unwrap();
    let (auth, tail) = rest.split_once('@').expect("the test server's URL has credentials");
    let password = auth.split_once(':').expect("the test server's URL has a password").1.to_string();
    let hostport = tail.split('/').next().unwrap().to_string();
    let out = tempfile::tempdir().unwrap();
    let mut chaos = Command::new(chaos_bin())
        .args(["--store", &url, "--seed", "5", "--handoffs", "2", "--chunks", "200", "--fault-seconds", "8"])
        // about argv, not coverage
        .args(["--allow-uncovered", "all"])
        .arg("--out")
        .arg(out.path())
        .args(["--quiet", "--dhp"])
        .arg(dhp_bin())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let me = chaos.id();
    // A child between fork and exec still shows its parent's argv: a copy
    // of dhp-chaos's own command line is the caller's, not a leak. Read
    // once dhp-chaos has exec'd (right after the spawn it may still show
    // this test's argv); its children's joining their cgroup before exec
    // makes that window easy to see.
    let read_own =
        || std::fs::read(format!("/proc/{me}/cmdline")).map(|b| String::from_utf8_lossy(&b).replace('\0', " "));
    let mut own = read_own().ok();
    let (mut workers, mut supervisors, mut leaks) = (0, 0, Vec::new());
    let t = Instant::now();
    while chaos.try_wait().unwrap().is_none() {
        assert!(t.elapsed() < Duration::from_secs(300), "the round did not end");
        if !own.as_ref().is_some_and(|o| o.contains(" --store ")) {
            own = read_own().ok();
        }
        for (pid, cmd) in processes() {
            // dhp-chaos itself was given the URL: that is the caller's argv
            if pid == me || pid == std::process::id() || own.as_ref().is_some_and(|o| *o == cmd) {
                continue;
            }
            if !descends_from(pid, me) {
                continue;
            }
            if cmd.contains(&password) {
                leaks.push(cmd.clone());
            } else if cmd.contains(&hostport) {
                if cmd.contains(" work ") {
                    workers += 1;
                } else if cmd.contains(" supervisor ") {
                    supervisors += 1;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = chaos.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    leaks.sort();
    leaks.dedup();
    assert!(leaks.is_empty(), "children with the password on their command line:\n{}", leaks.join("\n"));
    // the children were seen at work, with the store (password-less) on their command lines
    assert!(workers > 0 && supervisors > 0, "saw {workers} worker and {supervisors} supervisor samples");
}
