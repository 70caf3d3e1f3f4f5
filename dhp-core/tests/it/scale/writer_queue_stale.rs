//! The writers' queue (store/sqlite/writer_queue.rs) can hold a turn no live
//! thread will ever give back: a store directory copied while a writer held
//! its turn carries the locked mutex into the copy, and a machine that went
//! down with it locked leaves it in the file. Neither may cost every write
//! the queue wait: a file from another boot is initialised again at open,
//! and after one timed-out wait a process goes to the writer lock alone for
//! a back-off period. A Python stand-in (ctypes, the C library's own mutex
//! calls) holds the turn in the original while the file is copied.

use dhp_core::store::writer_queue::{WriterQueue, QUEUE_FILE, QUEUE_WAIT};
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const HOLD: &str = r#"
import ctypes, mmap, os, sys, time
libc = ctypes.CDLL("libc.so.6", use_errno=True)
fd = os.open(os.path.join(sys.argv[1], "dhp.sqlite3-writer-queue"), os.O_RDWR)
buf = mmap.mmap(fd, 4096)
m = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(buf)) + 64)
print(libc.pthread_mutex_lock(m), flush=True)
time.sleep(600)
"#;

/// A store root whose queue file is a copy taken while a live process held
/// the turn (the holder is killed afterwards: the copy is not its mapping).
fn copy_taken_while_held(dir: &Path) -> std::path::PathBuf {
    let orig = dir.join("orig");
    let copy = dir.join("copy");
    std::fs::create_dir_all(&orig).unwrap();
    std::fs::create_dir_all(&copy).unwrap();
    drop(WriterQueue::open(&orig).expect("the queue file is made and initialised"));
    let mut holder = Command::new(dhp_testkit::python())
        .args(["-c", HOLD, orig.to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "0", "the stand-in got the turn");
    std::fs::copy(orig.join(QUEUE_FILE), copy.join(QUEUE_FILE)).unwrap();
    holder.kill().unwrap();
    holder.wait().unwrap();
    copy
}

#[test]
fn a_turn_copied_with_the_store_costs_one_wait_not_one_per_write() {
    let dir = tempfile::tempdir().unwrap();
    let copy = copy_taken_while_held(dir.path());
    let q = WriterQueue::open(&copy).expect("same boot: the copy is used as it is");
    let t = Instant::now();
    assert!(q.enter().is_none(), "nobody can give the copied turn back");
    assert!(t.elapsed() >= QUEUE_WAIT, "the first writer waited the queue wait: {:?}", t.elapsed());
    // Without the back-off each of these would wait QUEUE_WAIT again (2 s).
    let t = Instant::now();
    for _ in 0..20 {
        assert!(q.enter().is_none());
    }
    assert!(t.elapsed() < Duration::from_secs(1), "writes after the timeout queued again: {:?}", t.elapsed());
}

#[test]
fn a_queue_file_from_another_boot_is_initialised_again() {
    let dir = tempfile::tempdir().unwrap();
    let copy = copy_taken_while_held(dir.path());
    // Stamp it with another boot (bytes 8..16), as after a reboot.
    let path = copy.join(QUEUE_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8..16].copy_from_slice(&3u64.to_ne_bytes());
    std::fs::write(&path, bytes).unwrap();
    let q = WriterQueue::open(&copy).expect("initialised again");
    let t = Instant::now();
    let turn = q.enter();
    assert!(turn.is_some(), "the locked state of another boot was not cleared");
    assert!(t.elapsed() < QUEUE_WAIT, "{:?}", t.elapsed());
}
