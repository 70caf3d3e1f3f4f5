//! One direction of one proxied connection: read, apply the active toxic,
//! forward.

use super::{observe, Conn, Inner, Toxic, POLL};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    /// Client → server.
    Up,
    /// Server → client.
    Down,
}

const BUF: usize = 16 * 1024;

pub(super) fn run(inner: &Inner, conn: &Conn, dir: Dir) {
    let (src, dst): (&TcpStream, &TcpStream) = match dir {
        Dir::Up => (&conn.client, &conn.server),
        Dir::Down => (&conn.server, &conn.client),
    };
    let mut rng = StdRng::seed_from_u64(inner.seed ^ conn.id.rotate_left(17) ^ (dir as u64));
    let mut frames = observe::Frames::default();
    let mut buf = vec![0u8; BUF];
    loop {
        if conn.dead.load(Ordering::SeqCst) || inner.stop.load(Ordering::SeqCst) {
            return;
        }
        let active = inner.active();
        let toxic = active.map(|a| a.toxic);
        let mut cap = BUF;
        match toxic {
            Some(Toxic::Blackhole { timeout_ms }) => {
                // hold the bytes: not reading leaves them in the kernel buffers
                let since = active.map_or(conn.opened, |a| a.since.max(conn.opened));
                if timeout_ms > 0 && since.elapsed() >= Duration::from_millis(timeout_ms) {
                    conn.close();
                    return;
                }
                std::thread::sleep(POLL);
                continue;
            }
            Some(Toxic::Reset) => {
                conn.reset();
                return;
            }
            Some(Toxic::Bandwidth { bytes_per_s }) => {
                // pieces of ~1/20 s each, so the rate holds at a fine grain
                cap = usize::try_from(bytes_per_s / 20).unwrap_or(BUF).clamp(1, BUF);
            }
            _ => {}
        }
        let n = match (&*src).read(&mut buf[..cap]) {
            Ok(0) => {
                if let Some(Toxic::SlowClose { ms }) = inner.active().map(|a| a.toxic) {
                    std::thread::sleep(Duration::from_millis(ms));
                }
                let _ = dst.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                continue
            }
            Err(_) => {
                conn.close();
                return;
            }
        };
        // the toxic may have changed while we waited for the bytes
        let active = inner.active();
        let mut n_out = n;
        let mut cut = false;
        match active.map(|a| a.toxic) {
            Some(Toxic::Latency { ms, jitter_ms }) => {
                let j = if jitter_ms > 0 { rng.gen_range(0..=jitter_ms) } else { 0 };
                std::thread::sleep(Duration::from_millis(ms + j));
            }
            Some(Toxic::CutAfter { bytes }) => {
                let generation = active.map_or(0, |a| a.generation);
                if conn.cut_gen.swap(generation, Ordering::SeqCst) != generation {
                    conn.cut_count.store(0, Ordering::SeqCst);
                }
                let before = conn.cut_count.fetch_add(n as u64, Ordering::SeqCst);
                if before + n as u64 >= bytes {
                    n_out = usize::try_from(bytes.saturating_sub(before)).unwrap_or(n).min(n);
                    cut = true;
                }
            }
            Some(Toxic::Reset) => {
                conn.reset();
                return;
            }
            Some(Toxic::Blackhole { .. }) => {
                // switched on while these bytes were read: they are held, not lost
                let held = buf[..n].to_vec();
                while inner.active().is_some_and(|a| matches!(a.toxic, Toxic::Blackhole { .. })) {
                    if conn.dead.load(Ordering::SeqCst) || inner.stop.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Some(Toxic::Blackhole { timeout_ms }) = inner.active().map(|a| a.toxic) {
                        let since = inner.active().map_or(conn.opened, |a| a.since.max(conn.opened));
                        if timeout_ms > 0 && since.elapsed() >= Duration::from_millis(timeout_ms) {
                            conn.close();
                            return;
                        }
                    }
                    std::thread::sleep(POLL);
                }
                buf[..n].copy_from_slice(&held);
            }
            _ => {}
        }
        let started = Instant::now();
        if n_out > 0 {
            if let Some(rec) = &inner.record {
                frames.feed(rec, conn, dir, &buf[..n_out]);
            }
            if (&*dst).write_all(&buf[..n_out]).is_err() {
                conn.close();
                return;
            }
        }
        if cut {
            conn.close();
            return;
        }
        if let Some(Toxic::Bandwidth { bytes_per_s }) = active.map(|a| a.toxic) {
            let due = Duration::from_secs_f64(n_out as f64 / bytes_per_s.max(1) as f64);
            if let Some(rest) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(rest);
            }
        }
    }
}
