//! The watcher of a database dhp-chaos set up (`dhp-chaos db-watch`, in a
//! session of its own) tears it down once the process it watches is gone
//! without tearing it down itself (SIGKILLed): the server stopped, its
//! directory removed. `dhp-chaos db start --watch PID` hands the database
//! to such a watcher. Needs PostgreSQL (scripts/services.sh installs it).
use crate::common::chaos_bin;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Is a postmaster running from `dir`'s data directory?
fn server_running(dir: &Path) -> bool {
    let Ok(pid) = std::fs::read_to_string(dir.join("data/postmaster.pid")) else { return false };
    pid.lines()
        .next()
        .and_then(|p| p.trim().parse::<u32>().ok())
        .is_some_and(|p| Path::new(&format!("/proc/{p}")).exists())
}

#[test]
fn a_database_outlives_no_watched_process() {
    // the process the database is handed to: SIGKILLed below
    let mut holder = Command::new("sleep").arg("600").stdin(Stdio::null()).spawn().unwrap();
    let o = Command::new(chaos_bin())
        .args(["db", "start", "single", "--watch", &holder.id().to_string()])
        .output()
        .expect("running dhp-chaos db start");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "db start failed:\n{text}\n{}", String::from_utf8_lossy(&o.stderr));
    let (dir, url) = text.lines().last().and_then(|l| l.split_once(' ')).expect("a `DIR URL` line");
    let dir = Path::new(dir).to_path_buf();
    assert!(url.starts_with("postgres://postgres:dhp-") && url.ends_with("/dhp"), "{url}");
    // dhp-chaos has exited; the database is the holder's now
    std::thread::sleep(Duration::from_secs(2));
    assert!(server_running(&dir), "the server in {} is not running while its holder lives", dir.display());
    holder.kill().unwrap();
    holder.wait().unwrap();
    let t = Instant::now();
    while dir.exists() && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let left = dir.exists();
    if left {
        let _ = Command::new(chaos_bin()).args(["db", "stop", "single"]).arg(&dir).status();
    }
    assert!(!left, "{} still there 60 s after its holder died", dir.display());
}
