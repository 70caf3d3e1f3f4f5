//! Issue 21 item 3: dhp-rs writers wait for the writer lock in a queue — a
//! robust, process-shared mutex in `dhp.sqlite3-writer-queue` — so that
//! one waiter is woken per commit. A process that dies holding its turn
//! passes it on (the kernel's robust-futex release; dhp-rs marks it
//! consistent), and a turn held by a live process that never lets go holds
//! writers up for at most the queue wait: they go to the writer lock
//! without it. A Python stand-in (ctypes, the C library's own mutex calls)
//! holds the turn.
use crate::common::*;
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Lock (or try) the queue's mutex from Python; prints the result code.
const PY: &str = r#"
import ctypes, mmap, os, sys, time
root, mode = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL("libc.so.6", use_errno=True)
fd = os.open(os.path.join(root, "dhp.sqlite3-writer-queue"), os.O_RDWR)
buf = mmap.mmap(fd, 4096)
m = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(buf)) + 64)
if mode == "hold":
    print(libc.pthread_mutex_lock(m), flush=True)
    time.sleep(600)
else:
    rc = libc.pthread_mutex_trylock(m)
    print(rc, flush=True)
    if rc == 0:
        libc.pthread_mutex_unlock(m)
"#;

fn hold(root: &str) -> std::process::Child {
    let mut c = Command::new(dhp_testkit::python())
        .args(["-c", PY, root, "hold"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(c.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "0", "the stand-in got the turn");
    c
}

fn try_turn(root: &str) -> String {
    let out = Command::new(dhp_testkit::python()).args(["-c", PY, root, "try"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_turn_held_for_ever_delays_writers_and_a_dead_holder_passes_it_on() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    // The first write makes and initialises the queue.
    let (code, _, err) = dhp(&["dispatch", root, "--create", "--census", "1000,2000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(try_turn(root), "0", "free between transactions");
    let mut holder = hold(root);
    // A live holder that never lets go: writers go on without the queue.
    let t = Instant::now();
    let (code, _, err) = dhp(&["dispatch", root, "--census", "1000,3000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(t.elapsed() < Duration::from_secs(30), "the write waited for the held turn: {:?}", t.elapsed());
    assert_eq!(try_turn(root), "16", "EBUSY: still held by the stand-in");
    // Killed holding it: the kernel releases the turn (robust mutex) ...
    holder.kill().unwrap();
    holder.wait().unwrap();
    // ... the next writer takes it, marks it consistent and passes it on:
    // free (0), not EOWNERDEAD (130, nobody took it) nor ENOTRECOVERABLE
    // (131, taken and released without being made consistent).
    let (code, _, err) = dhp(&["dispatch", root, "--census", "1000,4000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(try_turn(root), "0");
}
