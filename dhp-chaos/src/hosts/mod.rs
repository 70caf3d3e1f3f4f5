//! `--hosts N`: N simulated hosts, each a network namespace with its own
//! address, data directory (store), supervisors, workers and `dhp
//! transport` server. Host K's workers ship their checkpoints over real
//! TCP to host K+1 (mod N). Each host is a complete round directory
//! (`hK/`, checked on its own); `hK/peer` is a symlink to the directory
//! the peer's server writes (`hK+1/received`), so the transport checks
//! compare host K's store with what really arrived at its peer. One seeded
//! schedule injects the process faults on a drawn host and the network
//! faults (partitions) between hosts.

pub mod net;
pub mod partition;
pub mod timeline;

use crate::config::{FaultKind, HostRole, RoundConfig};
use crate::hist::{self, Writer};
use crate::round::{Driver, Live};
use anyhow::{bail, Context, Result};
use net::Net;
use partition::Cut;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Every host's transport server listens on this port (each namespace has
/// its own ports).
pub const PORT: u16 = 7707;
const TICK: Duration = Duration::from_millis(3);
/// The multi-host round's own record (what the hosts' histories also get).
pub const NET_HISTORY: &str = "net-history.jsonl";
/// The file in a multi-host round directory that describes its hosts (read by [`host_dirs`]).
pub const HOSTS_JSON: &str = "hosts.json";

/// The directory of host `k` inside a round directory.
pub fn host_dir(dir: &Path, k: u32) -> PathBuf {
    dir.join(format!("h{k}"))
}

/// A multi-host round directory (holds `hosts.json`): its host directories.
pub fn host_dirs(dir: &Path) -> Option<Vec<PathBuf>> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join(HOSTS_JSON)).ok()?).ok()?;
    if let Some(d) = v["dirs"].as_array() {
        return Some(d.iter().filter_map(|x| x.as_str()).map(|x| dir.join(x)).collect());
    }
    let n = v["count"].as_u64()? as u32;
    Some((0..n).map(|k| host_dir(dir, k)).collect())
}

/// The directory of the standby that replaced host `k`.
pub fn standby_dir(dir: &Path, k: u32) -> PathBuf {
    dir.join(format!("h{k}s"))
}

/// The configuration of each host: the round's, with its own seed stream,
/// namespace, address and peer.
fn host_configs(cfg: &RoundConfig, net: &Net) -> (Vec<RoundConfig>, Vec<RoundConfig>) {
    let n = net.hosts.len() as u32;
    let token = format!("chaos-{:016x}", cfg.seed);
    let hosts: Vec<RoundConfig> = (0..n)
        .map(|k| {
            let mut c = cfg.clone();
            // distinct spawn/victim streams per host, all from the round seed
            c.seed = cfg.seed ^ (u64::from(k) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let peer = &net.hosts[((k + 1) % n) as usize];
            c.host = Some(HostRole {
                index: k,
                count: n,
                netns: net.hosts[k as usize].netns.clone(),
                addr: net.hosts[k as usize].addr.clone(),
                ship_to: format!("{}:{PORT}", peer.addr),
                token: token.clone(),
            });
            c
        })
        .collect();
    // a standby has the address and peer of the host it replaces, a namespace
    // and seed streams of its own
    let standbys = hosts
        .iter()
        .map(|c| {
            let mut s = c.clone();
            s.seed ^= 0x57a4_db70_0000_0000;
            if let Some(h) = s.host.as_mut() {
                h.netns = net.standby_netns(h.index);
            }
            s
        })
        .collect();
    (hosts, standbys)
}

/// The multi-host schedule: process faults on a drawn host, partitions
/// between hosts.
struct Nemesis<'a> {
    net: Net,
    dir: PathBuf,
    standby_cfgs: &'a [RoundConfig],
    /// Drivers of dead hosts (still reaped and finished).
    dead: Vec<Driver<'a>>,
    rng: StdRng,
    rng_host: StdRng,
    hist: Writer,
    next_fault: f64,
    fault_id: u64,
    cut: Option<Cut>,
    partitions: u64,
}

/// Reap every host's exits (between the slow steps of a network fault).
fn reap_all<'a>(drivers: &mut [Driver<'a>], dead: &mut [Driver<'a>]) -> Result<()> {
    for d in drivers.iter_mut().chain(dead.iter_mut()) {
        d.reap_now()?;
    }
    Ok(())
}

impl<'a> Nemesis<'a> {
    /// Record an event in the round's own history and in every host's.
    fn record(&mut self, drivers: &mut [Driver<'_>], op: &str, fields: serde_json::Value) {
        self.hist.record(op, fields.clone());
        for d in drivers.iter_mut() {
            d.record(op, fields.clone());
        }
    }

    fn tick(&mut self, cfg: &RoundConfig, drivers: &mut [Driver<'a>]) -> Result<()> {
        let now = hist::now();
        if self.cut.as_ref().is_some_and(|c| now >= c.heal_at) {
            self.heal(drivers)?;
        }
        if now < self.next_fault {
            return Ok(());
        }
        let (a, b) = cfg.fault_interval_s;
        self.next_fault = self.next_fault.max(now - b) + if b > a { self.rng.gen_range(a..=b) } else { a };
        let total: f64 = cfg.fault_mix.iter().map(|(_, w)| w).sum();
        let mut x = self.rng.gen_range(0.0..total);
        let mut kind = cfg.fault_mix.last().map(|(k, _)| *k).unwrap_or(FaultKind::KillWorker);
        for (k, w) in &cfg.fault_mix {
            if x < *w {
                kind = *k;
                break;
            }
            x -= w;
        }
        let host = self.rng_host.gen_range(0..drivers.len());
        match kind {
            FaultKind::Partition if self.cut.is_none() => {
                self.fault_id += 1;
                let cut = Cut::draw(&mut self.rng_host, drivers.len() as u32, now, self.fault_id);
                cut.apply(&self.net, &mut || reap_all(drivers, &mut self.dead))?;
                let mut ev = cut.to_json();
                ev["phase"] = json!("start");
                self.record(drivers, "nemesis", ev);
                self.partitions += 1;
                for d in drivers.iter_mut() {
                    d.live.faults += 1;
                }
                self.cut = Some(cut);
            }
            FaultKind::Partition => {} // one partition at a time
            // one host death per round, not while a partition stands
            FaultKind::HostDeath if self.dead.is_empty() && self.cut.is_none() => {
                // a host whose every running handoff has shipped a few
                // checkpoints (a death before any work tests nothing)
                let ok: Vec<usize> =
                    (0..drivers.len()).filter(|&i| drivers[i].least_progress().is_some_and(|m| m >= 3)).collect();
                if !ok.is_empty() {
                    let d = if ok.contains(&host) { host } else { ok[host % ok.len()] };
                    self.host_death(drivers, d)?;
                }
            }
            FaultKind::HostDeath => {}
            k => {
                drivers[host].inject_kind(k);
            }
        }
        Ok(())
    }

    /// Host `d` dies: every process SIGKILLed at once; a standby namespace
    /// takes its address; the standby's store is rebuilt with `dhp ingest`
    /// from what host d shipped to its peer, and claim workers resume the
    /// unfinished handoffs from the last shipped checkpoint. The standby's
    /// transport server serves the dead host's log directory (its disk
    /// stays, re-attached), so the previous host keeps shipping there.
    fn host_death(&mut self, drivers: &mut [Driver<'a>], d: usize) -> Result<()> {
        let n = drivers.len() as u32;
        let k = d as u32;
        let fault_id = drivers[d].kill_host();
        let t = hist::now();
        self.fault_id += 1;
        self.record(
            drivers,
            "nemesis",
            json!({"kind": "host-death", "phase": "start", "host": k, "fault_id": self.fault_id}),
        );
        // reap what died before the namespace goes
        std::thread::sleep(Duration::from_millis(20));
        reap_all(drivers, &mut self.dead)?;
        self.net.replace(k)?;
        reap_all(drivers, &mut self.dead)?;
        let moved = drivers[d].unfinished();
        let received = host_dir(&self.dir, (k + 1) % n).join("received");
        let sdir = standby_dir(&self.dir, k);
        let mut sb = Driver::new(&self.standby_cfgs[d], &sdir)?;
        sb.paths.received = host_dir(&self.dir, k).join("received");
        std::os::unix::fs::symlink(format!("../h{}/received", (k + 1) % n), sdir.join("peer"))?;
        let (mut logs, mut lost) = (Vec::new(), Vec::new());
        for (_, hid) in &moved {
            let p = received.join(format!("{hid}.log"));
            if p.exists() {
                logs.push(p);
            } else {
                lost.push(hid.clone());
            }
        }
        let mut counts: std::collections::HashMap<String, u64> = Default::default();
        if !logs.is_empty() {
            let out = std::process::Command::new(&self.standby_cfgs[d].dhp)
                .args(["--json", "ingest", "--create"])
                .arg(sb.paths.store.as_os_str())
                .args(&logs)
                .output()
                .context("running dhp ingest")?;
            let v: serde_json::Value = serde_json::from_slice(&out.stdout)
                .with_context(|| format!("dhp ingest printed no JSON: {}", String::from_utf8_lossy(&out.stderr)))?;
            if !out.status.success() {
                bail!("dhp ingest of the dead host's shipped logs failed: {v}");
            }
            for r in v["reports"].as_array().into_iter().flatten() {
                if let Some(h) = r["handoff_id"].as_str() {
                    counts.insert(h.to_string(), r["checkpoints_ingested"].as_u64().unwrap_or(0));
                }
            }
        }
        reap_all(drivers, &mut self.dead)?;
        let taken: Vec<(u32, String, u64)> = moved
            .iter()
            .filter(|(_, h)| counts.contains_key(h))
            .map(|(i, h)| (*i as u32, h.clone(), counts[h]))
            .collect();
        let ingested: serde_json::Map<String, serde_json::Value> =
            taken.iter().map(|(_, h, c)| (h.clone(), json!(c))).collect();
        // the peer's lines from `ingested` on are the standby's, not this host's
        drivers[d].extra_meta = json!({"host_death": {"t": t, "fault_id": fault_id, "standby": format!("../h{k}s"),
            "moved": taken.iter().map(|x| &x.1).collect::<Vec<_>>(), "lost": lost.clone(),
            "ingested": ingested.clone()}});
        sb.start_standby(
            &taken,
            json!({"dir": format!("../h{k}"), "t_death": t, "ingested": ingested, "lost": lost.clone()}),
        )?;
        self.record(
            drivers,
            "nemesis",
            json!({"kind": "host-death", "phase": "standby", "host": k,
            "fault_id": self.fault_id, "moved": taken.len(), "lost": lost}),
        );
        sb.adopt_disk(&mut drivers[d]);
        let dead = std::mem::replace(&mut drivers[d], sb);
        self.dead.push(dead);
        reap_all(drivers, &mut self.dead)?;
        Ok(())
    }

    fn heal(&mut self, drivers: &mut [Driver<'a>]) -> Result<()> {
        if let Some(cut) = self.cut.take() {
            // the rules go one namespace at a time: links open from here on
            let started = hist::now();
            cut.heal(&self.net, &mut || reap_all(drivers, &mut self.dead))?;
            let mut ev = cut.to_json();
            ev["phase"] = json!("heal");
            ev["heal_started"] = json!(started);
            self.record(drivers, "nemesis", ev);
        }
        Ok(())
    }
}

fn sum_live(drivers: &[Driver<'_>]) -> Live {
    let mut l = Live::default();
    for d in drivers {
        l.kills += d.live.kills;
        l.faults += d.live.faults;
        l.pauses += d.live.pauses;
        l.failpoint_kills += d.live.failpoint_kills;
        l.terminal += d.live.terminal;
        l.spawned_workers += d.live.spawned_workers;
        l.spawned_supervisors += d.live.spawned_supervisors;
    }
    l
}

/// Run one multi-host round in `dir`; returns the host directories.
pub fn run(cfg: &RoundConfig, dir: &Path, n: u32, mut tick: impl FnMut(&Live)) -> Result<Vec<PathBuf>> {
    if n < 2 {
        bail!("--hosts needs at least 2 hosts");
    }
    net::check_support()?;
    net::cleanup_stale();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let net = Net::create(n)?;
    let (cfgs, standby_cfgs) = host_configs(cfg, &net);
    std::fs::write(
        dir.join(HOSTS_JSON),
        serde_json::to_vec_pretty(&json!({"count": n, "seed": cfg.seed, "port": PORT,
            "hosts": cfgs.iter().map(|c| &c.host).collect::<Vec<_>>()}))?,
    )?;
    let mut drivers = Vec::new();
    for (k, c) in cfgs.iter().enumerate() {
        let hd = host_dir(dir, k as u32);
        let d = Driver::new(c, &hd)?;
        // host K's peer log is what host K+1's server received
        let link = hd.join("peer");
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(format!("../h{}/received", (k as u32 + 1) % n), &link)?;
        }
        drivers.push(d);
    }
    let mut nem = Nemesis {
        net,
        dir: dir.to_path_buf(),
        standby_cfgs: &standby_cfgs,
        dead: Vec::new(),
        rng: StdRng::seed_from_u64(cfg.seed),
        rng_host: StdRng::seed_from_u64(cfg.seed ^ 0x5eed_5a17_0000_0004),
        hist: Writer::open(&dir.join(NET_HISTORY))?,
        next_fault: 0.0,
        fault_id: 0,
        cut: None,
        partitions: 0,
    };
    let t0 = nem.hist.record("round", json!({"phase": "start", "seed": cfg.seed, "hosts": n}));
    for d in &mut drivers {
        d.start()?;
    }
    let (a, b) = cfg.fault_interval_s;
    nem.next_fault = hist::now() + if b > a { nem.rng.gen_range(a..=b) } else { a };
    loop {
        let mut all = true;
        for d in drivers.iter_mut().chain(nem.dead.iter_mut()) {
            all &= d.step_faults(false)?;
        }
        if all {
            break;
        }
        nem.tick(cfg, &mut drivers)?;
        tick(&sum_live(&drivers));
        std::thread::sleep(TICK);
    }
    // a partition still standing heals when faults stop
    nem.heal(&mut drivers)?;
    for d in drivers.iter_mut().chain(nem.dead.iter_mut()) {
        d.stop_faults();
    }
    loop {
        let mut all = true;
        for d in drivers.iter_mut().chain(nem.dead.iter_mut()) {
            all &= d.step_grace()?;
        }
        if all {
            break;
        }
        tick(&sum_live(&drivers));
        std::thread::sleep(TICK);
    }
    // workers first on every host (a shipper needs its peer's server up), then services
    for d in drivers.iter_mut().chain(nem.dead.iter_mut()) {
        d.finish_workers()?;
    }
    for d in drivers.iter_mut().chain(nem.dead.iter_mut()) {
        d.finish_services()?;
    }
    nem.hist.record("round", json!({"phase": "end", "t0": t0, "partitions": nem.partitions}));
    let mut dirs: Vec<String> = (0..n).map(|k| format!("h{k}")).collect();
    dirs.extend(nem.dead.iter().filter_map(|d| d.host_index()).map(|k| format!("h{k}s")));
    std::fs::write(
        dir.join(HOSTS_JSON),
        serde_json::to_vec_pretty(&json!({"count": n, "seed": cfg.seed, "port": PORT, "dirs": dirs,
            "hosts": cfgs.iter().map(|c| &c.host).collect::<Vec<_>>()}))?,
    )?;
    drop(nem);
    drop(drivers);
    Ok(dirs.iter().map(|d| dir.join(d)).collect())
}
