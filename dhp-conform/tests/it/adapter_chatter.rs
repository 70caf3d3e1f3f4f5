//! An adapter idle in the pool that writes unsolicited stdout (issue 47
//! item 4): the runner reads at most one line ahead, so its memory does not
//! grow with the flood, and the chattering process is killed, not reused.
use crate::common::*;
use dhp_conform::client::{Pool, Profile};
use std::time::Duration;

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap()
}

#[test]
fn an_idle_adapter_flooding_stdout_is_bounded_and_not_reused() {
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("adapter.sh");
    // after the handshake: 1 MiB lines of JSON-looking junk, as fast as the pipe takes them
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n(sleep 0.5; exec python3 -c 'import sys\nl=(\"{{\\\"x\\\":\\\"\" + \"a\"*(1<<20) + \"\\\"}}\\n\")\nwhile True: sys.stdout.write(l)') &\nexec {}\n",
            adapter("")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let pool = Pool::new(&wrapper.display().to_string(), Profile::Default, Duration::from_secs(5), false);
    let first = {
        let lease = pool.get().expect("a handshake before the flood");
        lease.pid()
    };
    let before = rss_kib();
    std::thread::sleep(Duration::from_secs(3));
    let grew = rss_kib().saturating_sub(before);
    let second = pool.get().expect("a fresh adapter");
    assert_ne!(second.pid(), first, "the chattering adapter was reused");
    assert!(grew < 64 * 1024, "the runner grew by {} MiB while one adapter idled flooding its stdout", grew / 1024);
    drop(second);
    pool.drain();
}
