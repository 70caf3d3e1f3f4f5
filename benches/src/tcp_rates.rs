//! `dhp-bench tcp`: TCP shipping rates, synchronous and asynchronous, with
//! and without fsync, with and without TLS (one run, one machine), and the
//! RSS of a `dhp transport` process under 1,000 hostile connections.

use crate::fixture::io_err;
use crate::tcp::{ShipBed, TcpServer};
use dhp_core::transport::net::{ClientTls, ServerStats, ServerTls, ShipMode};
use dhp_core::TransportKind;
use dhp_core::{Error, Result};
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Sizes of one `tcp` run.
pub struct TcpSizes {
    /// Checkpoints per synchronous shipper.
    pub sync_n: usize,
    /// Checkpoints per asynchronous shipper.
    pub async_n: usize,
    /// Hostile connections for the RSS row.
    pub hostile: usize,
    /// Shipper counts of the bound rows ([`crate::tcp_bound`]).
    pub bound_shippers: &'static [usize],
    /// Checkpoints per shipper in the bound rows.
    pub bound_n: usize,
    /// Interleaved rounds of the bound rows.
    pub bound_reps: usize,
}

impl TcpSizes {
    /// The sizes `benches/compare.sh` measures.
    pub fn full() -> Self {
        TcpSizes {
            sync_n: 400,
            async_n: 4_000,
            hostile: 1_000,
            bound_shippers: &[1, 8, 32, 128],
            bound_n: 1_000,
            bound_reps: 5,
        }
    }
    /// Small sizes for a smoke run (`--quick`).
    pub fn quick() -> Self {
        TcpSizes { sync_n: 20, async_n: 100, hostile: 50, bound_shippers: &[1, 8], bound_n: 20, bound_reps: 1 }
    }
}

/// A CA and a server certificate for 127.0.0.1, as PEM files in `dir`.
pub fn make_pki(dir: &Path) -> Result<(ServerTls, ClientTls)> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    let bad = |e: rcgen::Error| Error::transport(TransportKind::Start, format!("rcgen: {e}"));
    let ca_key = KeyPair::generate().map_err(bad)?;
    let mut p = CertificateParams::new(Vec::<String>::new()).map_err(bad)?;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = p.self_signed(&ca_key).map_err(bad)?;
    let key = KeyPair::generate().map_err(bad)?;
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .map_err(bad)?
        .signed_by(&key, &ca, &ca_key)
        .map_err(bad)?;
    let w = |name: &str, text: String| -> Result<PathBuf> {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| io_err(&p, e))?;
        Ok(p)
    };
    let ca_path = w("ca.pem", ca.pem())?;
    let server =
        ServerTls { cert: w("server.pem", cert.pem())?, key: w("server.key", key.serialize_pem())?, client_ca: None };
    Ok((server, ClientTls { ca: ca_path, cert: None, key: None }))
}

/// Checkpoints per second: `shippers` shippers (one handoff each) ship
/// `n` checkpoints each to a fresh in-process server.
pub fn ship_rate(
    dir: &Path,
    fsync: bool,
    tls: Option<&(ServerTls, ClientTls)>,
    mode: ShipMode,
    shippers: usize,
    n: usize,
) -> Result<f64> {
    ship_run(dir, fsync, tls, mode, shippers, n).map(|r| r.rate)
}

/// One shipping run: its rate, the server's counters, and the CPU time
/// the process (shippers and server) used meanwhile.
pub struct ShipRun {
    /// Checkpoints per second.
    pub rate: f64,
    /// Wall time of the shipping, seconds.
    pub secs: f64,
    /// CPU seconds (user + system) of this process over the shipping.
    pub cpu_secs: f64,
    /// The server's counters (journal syncs and their timings).
    pub stats: ServerStats,
}

/// User + system CPU seconds of this process so far; 0 where that cannot
/// be read.
fn cpu_secs() -> f64 {
    crate::scale::cpu_s(std::process::id()).unwrap_or(0.0)
}

/// [`ship_rate`] with the details.
pub fn ship_run(
    dir: &Path,
    fsync: bool,
    tls: Option<&(ServerTls, ClientTls)>,
    mode: ShipMode,
    shippers: usize,
    n: usize,
) -> Result<ShipRun> {
    let _ = std::fs::remove_dir_all(dir);
    let logs = dir.join("logs");
    let srv = TcpServer::start_with(&logs, fsync, tls.map(|t| t.0.clone()))?;
    let mut beds = Vec::new();
    for i in 0..shippers {
        let buf = dir.join(format!("buf-{i}.log"));
        beds.push(ShipBed::with_tls(srv.addr(), mode, buf, 7_000 + i as u64, tls.map(|t| t.1.clone()))?);
    }
    let t0 = Instant::now();
    let c0 = cpu_secs();
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let hs: Vec<_> = beds
            .iter_mut()
            .map(|b| {
                s.spawn(move || -> Result<()> {
                    for _ in 0..n {
                        b.ship_next()?;
                    }
                    b.flush()
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::transport(TransportKind::Server, "shipper panicked"))))
            .collect()
    });
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu_secs() - c0;
    for r in results {
        r?;
    }
    drop(beds);
    let stats = srv.stop()?;
    if stats.checkpoints_appended != (shippers * n) as u64 {
        return Err(Error::transport(
            TransportKind::Server,
            format!("server appended {} of {}", stats.checkpoints_appended, shippers * n),
        ));
    }
    let _ = std::fs::remove_dir_all(dir);
    Ok(ShipRun { rate: (shippers * n) as f64 / secs, secs, cpu_secs: cpu, stats })
}

/// A `dhp transport` child process on a free loopback port.
pub struct ServerProc {
    /// The server process.
    pub child: Child,
    /// `127.0.0.1:PORT` it listens on.
    pub addr: String,
    /// Kept open: the server prints its stats there when it stops.
    _stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl ServerProc {
    /// Start `dhp transport LOGDIR` with `extra` flags and wait for its address.
    pub fn start(dhp: &Path, logdir: &Path, extra: &[&str]) -> Result<Self> {
        let mut child = Command::new(dhp)
            .arg("transport")
            .arg(logdir)
            .args(["--host", "127.0.0.1", "--port", "0"])
            .args(extra)
            .env_remove("DHP_TRANSPORT_TOKEN")
            .env("DHP_LOG", "error")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| io_err(dhp, e))?;
        let mut first = String::new();
        let out = child.stdout.take().ok_or_else(|| Error::transport(TransportKind::Start, "no stdout"))?;
        let mut out = std::io::BufReader::new(out);
        out.read_line(&mut first).map_err(|e| io_err(dhp, e))?;
        let addr = first
            .strip_prefix("dhp transport: listening on ")
            .and_then(|r| r.split(',').next())
            .ok_or_else(|| Error::transport(TransportKind::Start, format!("dhp transport did not start: {first:?}")))?
            .to_string();
        Ok(ServerProc { child, addr, _stdout: out })
    }

    /// Resident set size, KiB.
    pub fn rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// SIGTERM and wait; true on a clean exit.
    pub fn stop(mut self) -> bool {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        self.child.wait().map(|s| s.success()).unwrap_or(false)
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A connection from source address 127.0.0.`host` (so the strangers come
/// from many addresses, not only the per-address cap's one).
fn connect_from(host: u8, to: &str) -> Option<std::net::TcpStream> {
    use nix::sys::socket::{bind, connect, socket, AddressFamily, SockFlag, SockType, SockaddrIn};
    let to: std::net::SocketAddrV4 = to.parse().ok()?;
    let fd = socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).ok()?;
    use std::os::fd::AsRawFd;
    bind(fd.as_raw_fd(), &SockaddrIn::new(127, 0, 0, host, 0)).ok()?;
    connect(fd.as_raw_fd(), &SockaddrIn::from(to)).ok()?;
    let s = std::net::TcpStream::from(fd);
    let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
    Some(s)
}

/// Server RSS (KiB) before, during and after `n` hostile connections: a
/// third push 1 MiB without a newline, the rest connect and say nothing.
/// They come from 127.0.0.2..=127.0.0.201.
pub fn hostile_rss(dhp: &Path, dir: &Path, n: usize) -> Result<Value> {
    let _ = std::fs::remove_dir_all(dir);
    let srv = ServerProc::start(dhp, &dir.join("logs"), &[])?;
    std::thread::sleep(Duration::from_millis(500));
    let before = srv.rss_kb();
    let junk = vec![b'x'; 64 * 1024];
    let mut conns = Vec::new();
    let mut during = 0;
    for i in 0..n {
        let Some(mut c) = connect_from(2 + (i % 200) as u8, &srv.addr) else { continue };
        if i % 3 == 0 {
            for _ in 0..16 {
                if c.write_all(&junk).is_err() {
                    break;
                }
            }
        }
        conns.push(c);
        if i % 100 == 99 {
            during = during.max(srv.rss_kb());
        }
    }
    let held = conns.len();
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(100));
        during = during.max(srv.rss_kb());
    }
    drop(conns);
    std::thread::sleep(Duration::from_secs(2));
    let after = srv.rss_kb();
    let clean = srv.stop();
    let _ = std::fs::remove_dir_all(dir);
    Ok(json!({"connections": n, "connected": held, "rss_before_kb": before, "rss_during_peak_kb": during,
              "rss_after_kb": after, "clean_exit": clean}))
}

/// The whole `tcp` row set.
pub fn run(dir: &Path, dhp: &Path, sizes: &TcpSizes) -> Result<Value> {
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    let pki = make_pki(&dir.join("pki"))?;
    let probe = crate::measure::fsync_rate(dir, 3, 50)?.round();
    let mut rows = Vec::new();
    let cases: [(&str, ShipMode, usize, usize); 3] = [
        ("sync, 1 shipper", ShipMode::Sync, 1, sizes.sync_n),
        ("sync, 8 shippers", ShipMode::Sync, 8, sizes.sync_n),
        ("async, 1 shipper", ShipMode::Async { max_lag: 256 }, 1, sizes.async_n),
    ];
    for (label, mode, shippers, n) in cases {
        for tls in [false, true] {
            let mut r = json!({"case": label, "tls": tls});
            for fsync in [false, true] {
                eprintln!("dhp-bench tcp: {label}, tls={tls}, fsync={fsync}");
                let rate = ship_rate(&dir.join("rate"), fsync, tls.then_some(&pki), mode, shippers, n)?;
                r[if fsync { "fsync" } else { "no_fsync" }] = json!(rate.round());
            }
            rows.push(r);
        }
    }
    let bound = crate::tcp_bound::run(&dir.join("bound"), sizes.bound_shippers, sizes.bound_n, sizes.bound_reps)?;
    eprintln!("dhp-bench tcp: {} hostile connections", sizes.hostile);
    let hostile = hostile_rss(dhp, &dir.join("hostile"), sizes.hostile)?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(json!({"rates": rows, "hostile": hostile, "fsync_probe": probe, "bound": bound}))
}

/// The Markdown section for RESULTS.md.
pub fn markdown(v: &Value, soak: Option<&Value>) -> String {
    let mut s = String::from("\n## TCP transport (`dhp-bench tcp`)\n\n");
    s.push_str(&format!(
        "Checkpoints per second shipped to an in-process server on 127.0.0.1 (one handoff per shipper, local buffer log on). \
         `fsync`: the server acks a line only after a journal fdatasync covers it (group commit across connections); \
         `--no-fsync`: ack once written (the reference's behaviour). Raw fdatasync rate of this disk: {}/s.\n\n",
        v["fsync_probe"]
    ));
    s.push_str("| case | TLS | --no-fsync | fsync | fsync / --no-fsync |\n|---|---|---:|---:|---:|\n");
    for r in v["rates"].as_array().into_iter().flatten() {
        let (off, on) = (r["no_fsync"].as_f64().unwrap_or(0.0), r["fsync"].as_f64().unwrap_or(0.0));
        s.push_str(&format!(
            "| {} | {} | {off:.0} | {on:.0} | {:.2} |\n",
            r["case"].as_str().unwrap_or(""),
            if r["tls"] == true { "yes" } else { "no" },
            if off > 0.0 { on / off } else { 0.0 }
        ));
    }
    if v["bound"].is_object() {
        s.push_str(&crate::tcp_bound::markdown(&v["bound"]));
    }
    let h = &v["hostile"];
    let mb = |k: &str| h[k].as_f64().unwrap_or(0.0) / 1024.0;
    s.push_str(&format!(
        "\n`dhp transport` RSS under {} hostile connections ({} connected; a third pushing 1 MiB without a newline, \
         from 200 loopback addresses): before {:.1} MB, during (peak) {:.1} MB, after {:.1} MB.\n",
        h["connections"],
        h["connected"],
        mb("rss_before_kb"),
        mb("rss_during_peak_kb"),
        mb("rss_after_kb")
    ));
    if let Some(k) = soak {
        s.push_str(&crate::tcp_soak::markdown(k));
    }
    s
}
