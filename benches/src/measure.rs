//! Timing helpers and the machine's own limits: raw fsync rate, the SQLite
//! commit floor, peak RSS of a child process, and a description of the
//! machine.

use dhp_core::Result;
use rusqlite::{params, Connection};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::fixture::io_err;

/// Median of a non-empty list.
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = xs.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// Operations per second of `iters` calls of `f`, best-of-nothing: the
/// median over `rounds` rounds. `f` gets the global call index.
pub fn rate(rounds: usize, iters: usize, mut f: impl FnMut(usize) -> Result<()>) -> Result<f64> {
    let mut rates = Vec::with_capacity(rounds);
    let mut k = 0;
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        for _ in 0..iters.max(1) {
            f(k)?;
            k += 1;
        }
        rates.push(iters.max(1) as f64 / t.elapsed().as_secs_f64());
    }
    Ok(median(rates))
}

/// Like [`rate`] but `f` reports the time of its own measured region (for
/// operations that need per-call set-up).
pub fn rate_timed(rounds: usize, iters: usize, mut f: impl FnMut(usize) -> Result<Duration>) -> Result<f64> {
    let mut rates = Vec::with_capacity(rounds);
    let mut k = 0;
    for _ in 0..rounds.max(1) {
        let mut total = Duration::ZERO;
        for _ in 0..iters.max(1) {
            total += f(k)?;
            k += 1;
        }
        rates.push(iters.max(1) as f64 / total.as_secs_f64());
    }
    Ok(median(rates))
}

/// An append-only probe file for [`FsyncProbe::rate`]. Kept open across
/// rounds and removed on drop, so that no truncate or unlink (a TRIM on a
/// `discard` mount) lands between the rounds it is compared with.
pub struct FsyncProbe {
    path: std::path::PathBuf,
    file: std::fs::File,
}

impl FsyncProbe {
    /// A probe file in `dir`.
    pub fn new(dir: &Path) -> Result<Self> {
        let path = dir.join(format!("fsync-probe-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o644)
            .open(&path)
            .map_err(|e| io_err(&path, e))?;
        file.sync_all().map_err(|e| io_err(&path, e))?;
        Ok(FsyncProbe { path, file })
    }

    /// The raw durable-append rate: a 100-byte `write(2)` followed by
    /// `fdatasync(2)`, appended, as a WAL commit does; `n` of them.
    pub fn rate(&mut self, n: usize) -> Result<f64> {
        let mut line = vec![b'x'; 99];
        line.push(b'\n');
        let t = Instant::now();
        for _ in 0..n.max(1) {
            self.file.write_all(&line).map_err(|e| io_err(&self.path, e))?;
            self.file.sync_data().map_err(|e| io_err(&self.path, e))?;
        }
        Ok(n.max(1) as f64 / t.elapsed().as_secs_f64())
    }
}

impl Drop for FsyncProbe {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Median of `rounds` rounds of [`FsyncProbe::rate`] on a file in `dir`.
pub fn fsync_rate(dir: &Path, rounds: usize, n: usize) -> Result<f64> {
    let mut p = FsyncProbe::new(dir)?;
    let mut rates = Vec::new();
    for _ in 0..rounds.max(1) {
        rates.push(p.rate(n)?);
    }
    Ok(median(rates))
}

/// The SQLite floor: a one-row INSERT committed with `BEGIN IMMEDIATE` on
/// a WAL database with `synchronous=FULL` (what one commit costs with no
/// protocol logic at all); with [`CommitProbe::with_pages`], one row into
/// each of `pages` tables, so that each commit writes that many WAL frames
/// (the floor of an operation that changes that many pages). The database
/// is removed on drop.
pub struct CommitProbe {
    db: std::path::PathBuf,
    c: Option<Connection>,
    k: i64,
    pages: usize,
}

impl CommitProbe {
    /// A one-page probe database in `dir`.
    pub fn new(dir: &Path) -> Result<Self> {
        Self::with_pages(dir, 1)
    }

    /// A probe whose commits each change `pages` (at least 1) pages: one
    /// row appended to each of as many tables (the first is the one-page
    /// probe's `t`).
    pub fn with_pages(dir: &Path, pages: usize) -> Result<Self> {
        let pages = pages.max(1);
        let db = dir.join(format!("commit-floor-{}-{pages}.sqlite3", std::process::id()));
        let c = Connection::open(&db)?;
        c.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))?;
        c.execute_batch("PRAGMA synchronous=FULL;")?;
        for i in 0..pages {
            c.execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS {} (k INTEGER PRIMARY KEY, v TEXT NOT NULL);",
                Self::table(i)
            ))?;
        }
        Ok(CommitProbe { db, c: Some(c), k: 0, pages })
    }

    fn table(i: usize) -> String {
        if i == 0 {
            "t".into()
        } else {
            format!("t{i}")
        }
    }

    /// Commits per second over `n` commits.
    pub fn rate(&mut self, n: usize) -> Result<f64> {
        let c = self.c.as_ref().expect("open until drop");
        let inserts: Vec<String> =
            (0..self.pages).map(|i| format!("INSERT INTO {} (k, v) VALUES (?1, ?2)", Self::table(i))).collect();
        let k = &mut self.k;
        rate(1, n, |_| {
            c.execute_batch("BEGIN IMMEDIATE")?;
            for sql in &inserts {
                c.prepare_cached(sql)?.execute(params![*k, "{\"count\": 1, \"next_n\": 100, \"total\": 7}"])?;
            }
            c.execute_batch("COMMIT")?;
            *k += 1;
            Ok(())
        })
    }
}

/// WAL frames a write operation on the store at `root` appends per call,
/// over `n` calls of `f` (SQLite writes one frame per page a commit
/// changed).
pub fn wal_frames_per(root: &Path, n: usize, f: impl FnMut(usize) -> Result<()>) -> Result<f64> {
    let (_, wal) = grown_wal(root, n, f)?;
    let page = be32(&wal, 8) as usize;
    // A WAL file is a 32-byte header and frames of 24 bytes + one page.
    Ok(wal.len().saturating_sub(32) as f64 / (page + 24) as f64 / n.max(1) as f64)
}

/// Which b-trees (tables and indexes, by name) the pages of a write
/// operation's commits belong to: pages per call, over `n` calls of `f`,
/// largest first, with the total. Each frame names its page; page numbers
/// are mapped to b-trees by SQLite's `dbstat` table afterwards, so a page
/// a commit allocated counts for the b-tree that owns it at the end.
pub fn wal_pages_by_btree(
    root: &Path,
    n: usize,
    f: impl FnMut(usize) -> Result<()>,
) -> Result<(f64, Vec<(String, f64)>)> {
    let (c, wal) = grown_wal(root, n, f)?;
    let page = be32(&wal, 8) as usize;
    let mut owner: std::collections::HashMap<u32, String> = std::collections::HashMap::new();
    let mut st = c.prepare("SELECT name, pageno FROM dbstat")?;
    for row in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (name, pgno) = row?;
        owner.insert(pgno as u32, name);
    }
    let mut counts: std::collections::BTreeMap<String, f64> = std::collections::BTreeMap::new();
    let mut total = 0usize;
    let mut at = 32;
    while page > 0 && at + 24 + page <= wal.len() {
        let pgno = be32(&wal, at);
        *counts.entry(owner.get(&pgno).cloned().unwrap_or_else(|| format!("page {pgno} (freed)"))).or_default() += 1.0;
        total += 1;
        at += 24 + page;
    }
    let per = n.max(1) as f64;
    let mut by: Vec<(String, f64)> = counts.into_iter().map(|(k, v)| (k, v / per)).collect();
    by.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
    Ok((total as f64 / per, by))
}

/// The store's WAL after `n` calls of `f`, with a connection to the store.
/// The WAL is checkpointed and truncated first, and a read transaction is
/// held open meanwhile so that no checkpoint can restart it: it then holds
/// every frame the calls wrote, and only those.
fn grown_wal(root: &Path, n: usize, mut f: impl FnMut(usize) -> Result<()>) -> Result<(Connection, Vec<u8>)> {
    let db = root.join(dhp_core::store::sqlite::DB_FILE);
    let wal = root.join(format!("{}-wal", dhp_core::store::sqlite::DB_FILE));
    let c = Connection::open(&db)?;
    let busy: i64 = c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
    if busy != 0 {
        let busy =
            std::io::Error::other("the WAL could not be checkpointed and truncated (a reader or writer is active)");
        return Err(io_err(&wal, busy));
    }
    c.execute_batch("BEGIN; SELECT count(*) FROM schema_version;")?;
    for i in 0..n {
        f(i)?;
    }
    let bytes = std::fs::read(&wal).map_err(|e| io_err(&wal, e))?;
    c.execute_batch("COMMIT")?;
    Ok((c, bytes))
}

/// The big-endian `u32` at `at` (0 past the end).
fn be32(bytes: &[u8], at: usize) -> u32 {
    bytes.get(at..at + 4).map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

impl Drop for CommitProbe {
    fn drop(&mut self) {
        drop(self.c.take());
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.db.display()));
        }
    }
}

/// What [`peak_rss`] observed.
#[derive(Debug, Clone)]
pub struct PeakRss {
    /// `VmHWM` of the process, read at its exit stop (KiB): the peak
    /// resident set since its `exec`, file-backed pages included.
    pub vm_hwm_kib: i64,
    /// Resident anonymous / file-backed KiB at the exit stop.
    pub anon_kib: i64,
    /// File-backed resident KiB at the exit stop.
    pub file_kib: i64,
    /// The largest mappings at the exit stop: (Rss KiB, mapping).
    pub top_mappings: Vec<(i64, String)>,
    /// The exit code, if the process exited (not killed).
    pub exit_code: Option<i32>,
    /// Wall-clock seconds from spawn to exit.
    pub elapsed_s: f64,
    /// What it printed on stdout.
    pub stdout: String,
    /// What it printed on stderr.
    pub stderr: String,
}

fn status_kib(pid: i32, field: &str) -> Option<i64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// The `n` mappings with the most resident memory, merged by name.
fn top_mappings(pid: i32, n: usize) -> Vec<(i64, String)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut by_name: std::collections::BTreeMap<String, i64> = Default::default();
    let mut current = String::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.first().is_some_and(|a| a.contains('-') && a.chars().all(|c| c.is_ascii_hexdigit() || c == '-')) {
            current = f.get(5).map(|s| s.to_string()).unwrap_or_else(|| "[anon]".into());
        } else if f.first() == Some(&"Rss:") {
            *by_name.entry(current.clone()).or_default() += f.get(1).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
        }
    }
    let mut v: Vec<(i64, String)> = by_name.into_iter().map(|(k, r)| (r, k)).collect();
    v.sort_by_key(|m| std::cmp::Reverse(m.0));
    v.truncate(n);
    v
}

/// Run `cmd` to completion and return its peak RSS, read from
/// `/proc/<pid>/status` (`VmHWM`) while the process sits in its
/// `PTRACE_EVENT_EXIT` stop — after its last instruction, before its
/// memory is torn down. Unlike `getrusage(RUSAGE_CHILDREN)`, this is not
/// inflated by the parent's image that a fork/vfork child carries up to its
/// `exec`. The child's stdout/stderr are captured to temporary files.
pub fn peak_rss(cmd: &mut std::process::Command) -> Result<PeakRss> {
    use nix::sys::ptrace::{self, Event, Options};
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    use nix::unistd::Pid;
    let out = tempfile::tempfile().map_err(|e| io_err(Path::new("stdout"), e))?;
    let err = tempfile::tempfile().map_err(|e| io_err(Path::new("stderr"), e))?;
    let (out2, err2) = (
        out.try_clone().map_err(|e| io_err(Path::new("stdout"), e))?,
        err.try_clone().map_err(|e| io_err(Path::new("stderr"), e))?,
    );
    // The child starts as a shell blocked on its stdin: it is seized there
    // (no race with a short-lived program), then released to `exec` the
    // command in place. The exec gives the program a fresh memory image, so
    // VmHWM at the exit stop covers the program alone.
    let mut w = std::process::Command::new("/bin/sh");
    w.arg("-c").arg("read -r _ || true; exec \"$0\" \"$@\"").arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => w.env(k, v),
            None => w.env_remove(k),
        };
    }
    if let Some(d) = cmd.get_current_dir() {
        w.current_dir(d);
    }
    let t = Instant::now();
    let mut child = w
        .stdin(std::process::Stdio::piped())
        .stdout(out2)
        .stderr(err2)
        .spawn()
        .map_err(|e| io_err(Path::new("spawn"), e))?;
    let pid = Pid::from_raw(child.id() as i32);
    let sys = |e: nix::errno::Errno| dhp_core::Error::Io { path: "ptrace".into(), source: std::io::Error::from(e) };
    let seized = ptrace::seize(pid, Options::PTRACE_O_TRACEEXIT).map_err(sys);
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"go\n");
    }
    if let Err(e) = seized {
        let _ = child.wait();
        return Err(e);
    }
    let (mut hwm, mut anon, mut file, mut top) = (-1, -1, -1, Vec::new());
    let code = loop {
        match waitpid(pid, Some(WaitPidFlag::__WALL)).map_err(sys)? {
            WaitStatus::PtraceEvent(p, _, ev) if ev == Event::PTRACE_EVENT_EXIT as i32 => {
                hwm = status_kib(p.as_raw(), "VmHWM:").unwrap_or(-1);
                anon = status_kib(p.as_raw(), "RssAnon:").unwrap_or(-1);
                file = status_kib(p.as_raw(), "RssFile:").unwrap_or(-1);
                top = top_mappings(p.as_raw(), 6);
                let _ = ptrace::cont(p, None);
            }
            WaitStatus::PtraceEvent(p, _, _) => {
                let _ = ptrace::cont(p, None);
            }
            WaitStatus::Stopped(p, sig) => {
                let _ = ptrace::cont(p, Some(sig));
            }
            WaitStatus::Exited(_, c) => break Some(c),
            WaitStatus::Signaled(..) => break None,
            _ => {}
        }
    };
    let elapsed_s = t.elapsed().as_secs_f64();
    drop(child);
    let read = |mut f: std::fs::File| {
        use std::io::{Read, Seek};
        let mut s = String::new();
        let _ = f.seek(std::io::SeekFrom::Start(0));
        let _ = f.read_to_string(&mut s);
        s
    };
    Ok(PeakRss {
        vm_hwm_kib: hwm,
        anon_kib: anon,
        file_kib: file,
        top_mappings: top,
        exit_code: code,
        elapsed_s,
        stdout: read(out),
        stderr: read(err),
    })
}

/// nproc, CPU model, memory, and the file system of `path`.
pub fn machine(path: &Path) -> serde_json::Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let mhz = cpuinfo
        .lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split_once(':'))
        .and_then(|(_, v)| v.trim().parse::<f64>().ok());
    let model = match mhz {
        Some(m) => format!("{model} @ {:.2} GHz", m / 1000.0),
        None => model,
    };
    let nproc = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let mem_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let abs = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mut best: Option<(usize, String, String, String)> = None;
    for l in std::fs::read_to_string("/proc/mounts").unwrap_or_default().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let mnt = f[1];
        if abs.starts_with(mnt) && best.as_ref().is_none_or(|b| mnt.len() > b.0) {
            best = Some((mnt.len(), format!("{} on {}", f[0], mnt), f[2].to_string(), f[3].to_string()));
        }
    }
    let (mount, fstype, opts) = best.map(|b| (b.1, b.2, b.3)).unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
    serde_json::json!({
        "nproc": nproc, "cpu": model, "mem_gib": (mem_kib as f64 / 1024.0 / 1024.0 * 10.0).round() / 10.0,
        "path": abs.display().to_string(), "mount": mount, "fstype": fstype, "mount_options": opts,
        "kernel": kernel,
    })
}

/// The 1-minute load average.
pub fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(f64::NAN)
}

fn fine_busy_handler(attempt: i32) -> bool {
    // 100 µs sleeps for up to ~30 s: a waiter gets the lock within 0.1 ms
    // of its release instead of SQLite's 1, 2, 5, 10, 15, 20, 25 … ms ladder.
    if attempt > 300_000 {
        return false;
    }
    std::thread::sleep(Duration::from_micros(100));
    true
}

/// What limits a recover race: `racers` threads, each with its own
/// connection, run the recover CAS in raw SQL (`BEGIN IMMEDIATE`; read the
/// owner row; the one that sees `__orphaned__` takes it and commits, the
/// others roll back) on a WAL database with `synchronous=FULL`. With
/// `fine_busy` the connections use a 100 µs busy handler instead of
/// `busy_timeout` (SQLite's sleep ladder). Returns races per second.
pub fn lock_race_rate(dir: &Path, racers: usize, races: usize, fine_busy: bool) -> Result<f64> {
    use std::sync::{Arc, Barrier};
    let db = dir.join(format!("lock-race-{}-{}.sqlite3", std::process::id(), fine_busy));
    {
        let c = Connection::open(&db)?;
        c.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))?;
        c.execute_batch(
            "CREATE TABLE IF NOT EXISTS own (k INTEGER PRIMARY KEY, holder TEXT NOT NULL, fence INTEGER NOT NULL);",
        )?;
    }
    let open = || -> Result<Connection> {
        let c = Connection::open(&db)?;
        c.execute_batch("PRAGMA synchronous=FULL;")?;
        if fine_busy {
            c.busy_handler(Some(fine_busy_handler))?;
        } else {
            c.busy_timeout(Duration::from_secs(30))?;
        }
        Ok(c)
    };
    let setup = open()?;
    let conns: Vec<Connection> = (0..racers).map(|_| open()).collect::<Result<_>>()?;
    let (start, end) = (Arc::new(Barrier::new(racers + 1)), Arc::new(Barrier::new(racers + 1)));
    let mut total = Duration::ZERO;
    std::thread::scope(|sc| -> Result<()> {
        let handles: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let (start, end) = (start.clone(), end.clone());
                sc.spawn(move || -> Result<usize> {
                    let mut wins = 0;
                    for k in 0..races {
                        start.wait();
                        c.execute_batch("BEGIN IMMEDIATE")?;
                        let holder: String =
                            c.query_row("SELECT holder FROM own WHERE k=?1", [k as i64], |r| r.get(0))?;
                        if holder == "__orphaned__" {
                            c.execute(
                                "UPDATE own SET holder=?1, fence=fence+1 WHERE k=?2",
                                params![format!("r{i}"), k as i64],
                            )?;
                            c.execute_batch("COMMIT")?;
                            wins += 1;
                        } else {
                            c.execute_batch("ROLLBACK")?;
                        }
                        end.wait();
                    }
                    Ok(wins)
                })
            })
            .collect();
        for k in 0..races {
            setup.execute("INSERT INTO own (k, holder, fence) VALUES (?1, '__orphaned__', 1)", [k as i64])?;
            let t = Instant::now();
            start.wait();
            end.wait();
            total += t.elapsed();
        }
        let wins: usize = handles.into_iter().map(|h| h.join().expect("racer thread").unwrap_or(0)).sum();
        assert_eq!(wins, races, "exactly one winner per race");
        Ok(())
    })?;
    drop(setup);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    Ok(races as f64 / total.as_secs_f64())
}
