//! The environment marker: the net where no cgroup can be made. Every
//! child is started with `VAR=value`; a descendant that left the group and
//! the tree still carries it, unless it cleared its environment (then it
//! escapes, and the harness does not claim more than it can see).

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Processes other than this one whose environment holds `var=v` for a
/// value `v` that `select` accepts (dead ones excluded), with their command
/// lines.
pub fn scan(var: &str, select: &dyn Fn(&str) -> bool) -> Vec<(i32, String)> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let prefix = format!("{var}=");
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if pid == me || crate::zombie(pid) {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        let marked = env
            .split(|b| *b == 0)
            .filter_map(|kv| std::str::from_utf8(kv).ok())
            .any(|kv| kv.strip_prefix(&prefix).is_some_and(select));
        if marked {
            out.push((pid, crate::cmdline(pid)));
        }
    }
    out
}

/// Find and SIGKILL (after SIGCONT: a stopped one dies at once) every
/// process [`scan`] finds, again until none is left (one may fork while
/// the scan runs; bounded); the processes ended.
pub fn sweep(var: &str, select: &dyn Fn(&str) -> bool) -> Vec<(i32, String)> {
    let mut found: Vec<(i32, String)> = Vec::new();
    for _ in 0..20 {
        let now = scan(var, select);
        if now.is_empty() {
            break;
        }
        for (pid, cmdline) in now {
            let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            if !found.iter().any(|f| f.0 == pid) {
                found.push((pid, cmdline));
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn only_the_selected_value_is_swept() {
        let var = "DHP_PROCS_UNIT_MARK";
        let value = format!("run-{}", std::process::id());
        let mut mine = Command::new("sleep").arg("60").env(var, &value).spawn().unwrap();
        let mut other = Command::new("sleep").arg("60").env(var, "someone-else").spawn().unwrap();
        for _ in 0..200 {
            if !scan(var, &|v| v == value).is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let found = sweep(var, &|v| v == value);
        assert_eq!(found.iter().map(|f| f.0 as u32).collect::<Vec<_>>(), vec![mine.id()], "{found:?}");
        assert!(!mine.wait().unwrap().success());
        assert!(crate::alive(other.id()));
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
