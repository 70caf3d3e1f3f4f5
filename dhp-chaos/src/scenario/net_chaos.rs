//! `--scenario net-chaos`: workers SIGKILLed mid-ship, round after round,
//! then what landed on the peer.
//!
//! The reference's README claims "a network chaos harness
//! (`demo/net_chaos.py`) SIGKILLs workers mid-ship across rounds: 24/24
//! checkpoints land on the peer, zero rework"; the script is not in the
//! package. Reconstructed from that sentence and the reference's own
//! network semantics (`dhp.net`: a TransportServer on the peer, a
//! NetShipper in the worker that commits, then ships each checkpoint over
//! TCP and waits for its ack):
//!
//! - one store, one transport server (the peer: `dhp transport` on a free
//!   port, or `--transport CMD`) and `--supervisor-count` supervisors for
//!   the whole run; R handoffs of C census chunks (`--net-rounds`,
//!   `--net-checkpoints`: 4 × 6 = 24 checkpoints by default);
//! - round i: a worker claims handoff i and checkpoints, shipping each
//!   checkpoint synchronously through a relay to the peer; at a seeded
//!   moment (a [`Moment`] at a seeded seq k) it is SIGKILLed; a supervisor
//!   orphans the handoff; a standby recovers it from the store's last
//!   checkpoint and finishes it (shipping too);
//! - then the checker runs on the round directory as on any round, and
//!   per handoff every committed seq is looked up in the peer's log
//!   ([`crate::check::landing`]): landed, missing or altered, and the
//!   rework the kill caused (the `rework` invariant's count).
//!
//! The moments are seeded per round: the first three rounds get the three
//! moments in a seeded order (two rounds: one between ships and one in
//! flight), later rounds a seeded draw. k is uniform in 1..=C-2, so the
//! kill always has work before and after it.

use super::net_procs::Stage;
use super::net_report::{self, Kill};
use super::relay::{Moment, Relay};
use crate::config::{FaultKind, Impl, RoundConfig, Ship};
use crate::hist;
use crate::round::{Paths, ORPHANED};
use anyhow::{bail, Context, Result};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::net::ToSocketAddrs;
use std::path::Path;
use std::time::Duration;

/// Slowest pace between chunks: the between-ships kill lands in this pause.
pub const MIN_PACE_S: f64 = 0.1;
/// Longest wait for a worker to reach its moment, for an orphan, or for a standby.
const WAIT_S: f64 = 60.0;

/// The scenario's own settings (the rest comes from the round template).
#[derive(Debug, Clone)]
pub struct Options {
    /// Rounds (handoffs, one kill each).
    pub rounds: u32,
    /// Checkpoints per handoff (census chunks).
    pub checkpoints: u64,
    /// Progress lines on stderr.
    pub quiet: bool,
    /// Known reference weaknesses do not fail the checker's part of the verdict.
    pub allow_known_reference_bugs: bool,
}

/// The moment and seq of each round's kill, from the seed.
pub fn plan(seed: u64, rounds: u32, checkpoints: u64) -> Vec<(Moment, i64)> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6e65_745f_6368_616f);
    let mut order = [Moment::BetweenShips, Moment::FrameInFlight, Moment::AckInFlight];
    order.shuffle(&mut rng);
    if rounds == 2 && !order[..2].contains(&Moment::BetweenShips) {
        order[1] = Moment::BetweenShips;
    }
    (0..rounds as usize)
        .map(|i| {
            let m = if i < 3 { order[i] } else { *order.choose(&mut rng).unwrap_or(&Moment::BetweenShips) };
            (m, rng.gen_range(1..=checkpoints.saturating_sub(2).max(1)) as i64)
        })
        .collect()
}

/// Refuse settings the scenario cannot run (before anything is created).
pub fn validate(o: &Options, chunk: u64, base: u64, pace_s: f64, workers: &Impl) -> Result<()> {
    if o.rounds == 0 {
        bail!("--net-rounds must be at least 1");
    }
    if o.checkpoints < 3 {
        bail!("--net-checkpoints must be at least 3 (a kill needs a checkpoint before and after it)");
    }
    let span = o.checkpoints.checked_mul(chunk).and_then(|s| s.checked_mul(u64::from(o.rounds)));
    if span.and_then(|s| s.checked_add(base)).is_none() {
        bail!("--net-rounds × --net-checkpoints × --chunk numbers from --base overflow 64 bits");
    }
    if !(pace_s.is_finite() && pace_s <= 60.0) {
        bail!("--pace wants seconds, at most 60");
    }
    if *workers == Impl::Mixed {
        bail!("--scenario net-chaos runs builtin, python or command workers, not mixed");
    }
    Ok(())
}

/// The round configuration of a net-chaos run from the CLI's template.
pub fn config(tmpl: &RoundConfig, o: &Options) -> Result<RoundConfig> {
    validate(o, tmpl.chunk, tmpl.base, tmpl.pace_s, &tmpl.workers)?;
    let mut c = tmpl.clone();
    c.handoffs = o.rounds;
    c.chunks = o.checkpoints;
    c.dlq_handoffs = 0;
    c.ship = Ship::Tcp;
    c.fault_mix = vec![(FaultKind::KillWorker, 1.0)];
    c.failpoint_rate = 0.0;
    c.race_rate = 0.0;
    c.pace_s = c.pace_s.max(MIN_PACE_S);
    Ok(c)
}

/// Run the scenario into `out` (a run directory; the round is `round-0000`).
/// Exit code: 0 held, 1 a checkpoint missing on the peer, rework above one
/// chunk per kill, or an invariant violated.
pub fn run(cfg: &RoundConfig, o: &Options, out: &Path) -> Result<i32> {
    let dir = out.join("round-0000");
    let paths = Paths::new(&dir);
    let plan = plan(cfg.seed, o.rounds, o.checkpoints);
    let mut rng = StdRng::seed_from_u64(cfg.seed ^ 0x6b69_6c6c_5f64_6c79);
    let say = |s: String| {
        if !o.quiet {
            eprintln!("net-chaos: {s}");
        }
    };
    let mut st = Stage::new(cfg, paths.clone())?;
    let hids = st.dispatch()?;
    let t0 = st.hist.record("round", json!({"phase": "start", "seed": cfg.seed, "round": 0, "scenario": "net-chaos"}));
    let meta = |extra: serde_json::Value| -> Result<()> {
        let mut m = json!({"config": cfg, "hids": hids, "t0": t0, "harness_pid": std::process::id(),
                           "scenario": "net-chaos", "net_chaos_plan": plan.iter().map(|(m, k)| json!({"moment": m, "seq": k})).collect::<Vec<_>>()});
        if let (Some(m), serde_json::Value::Object(e)) = (m.as_object_mut(), extra) {
            m.extend(e);
        }
        std::fs::write(&paths.meta, serde_json::to_vec_pretty(&m)?)?;
        Ok(())
    };
    meta(json!({}))?;
    let peer = st.spawn_transport()?;
    let upstream = peer.to_socket_addrs()?.next().with_context(|| format!("transport address {peer}"))?;
    let relay = Relay::start(upstream, &paths.proxy_record)?;
    st.ship_to = relay.addr().to_string();
    for _ in 0..cfg.supervisor_count {
        st.spawn_supervisor()?;
    }
    let mut kills = Vec::new();
    for (i, (moment, k)) in plan.iter().copied().enumerate() {
        let delay = if moment == Moment::BetweenShips { rng.gen_range(0.0..=cfg.pace_s / 4.0) } else { 0.0 };
        let kill = one_round(&mut st, &relay, i as u32, &hids[i], moment, k, delay)?;
        say(kill.line());
        kills.push(kill);
    }
    let all_terminal = hids.iter().all(|h| matches!(st.look(h).0.as_str(), "completed" | "failed"));
    let t_fe = st.hist.record("round", json!({"phase": "faults-stopped", "all_terminal": all_terminal}));
    let fin = st.final_state(&hids);
    st.hist.record("round", json!({"phase": "terminal", "all_terminal": all_terminal, "final": fin}));
    st.teardown()?;
    drop(relay);
    let t_end = st.hist.record("round", json!({"phase": "end"}));
    meta(json!({"t_faults_end": t_fe, "t_end": t_end, "final": fin, "all_terminal": all_terminal}))?;
    drop(st);
    net_report::finish(cfg, o, out, &dir, &kills)
}

/// Round `idx`: claim, kill at the moment, recover on a standby, finish.
fn one_round(
    st: &mut Stage<'_>,
    relay: &Relay,
    idx: u32,
    hid: &str,
    moment: Moment,
    k: i64,
    delay: f64,
) -> Result<Kill> {
    relay.arm(hid, k, moment);
    let w = st.spawn_worker(idx, hid, "claim", None)?;
    let victim = st.table.procs[w].name.clone();
    let mut kill = Kill::new(idx, hid, moment, k, &victim);
    let deadline = hist::now() + WAIT_S;
    // wait for the moment (or for the worker to get past it unseen, or to end)
    let reached = loop {
        st.reap()?;
        if let Some(hit) = relay.wait_hit(Duration::from_millis(3)) {
            break Some(("relay", Some(hit)));
        }
        let (status, _, n) = st.look(hid);
        if !st.table.procs[w].alive() || status == "completed" {
            break None;
        }
        if n >= k + 2 {
            // two checkpoints past k and the relay never saw it: a shipper that does not ship
            break Some(("store", None));
        }
        if hist::now() > deadline {
            bail!("net-chaos round {idx}: {victim} did not reach seq {k} within {WAIT_S} s");
        }
    };
    match reached {
        Some((via, hit)) => {
            std::thread::sleep(Duration::from_secs_f64(delay));
            st.fault_id += 1;
            let extra = json!({"scenario": "net-chaos", "moment": moment, "seq": k, "reached_via": via,
                               "relay_conn": hit.map(|h| h.conn), "delay_s": delay});
            if st.kill(w, "kill-worker", extra) {
                kill.t_kill = Some(hist::now());
            }
            kill.reached_via = Some(via.to_string());
            relay.release();
        }
        None => {
            relay.release();
            st.hist.record(
                "observe",
                json!({"what": "net-chaos-missed", "hid": hid, "victim": victim, "moment": moment, "seq": k}),
            );
        }
    }
    // a standby recovers the orphan and finishes
    // one standby normally; another each time one dies before finishing
    // (a standby may die at every checkpoint that is left)
    let max_standbys = st.cfg.chunks + 2;
    for _ in 0..max_standbys {
        let deadline = hist::now() + WAIT_S;
        let fence = loop {
            st.reap()?;
            let (status, own, _) = st.look(hid);
            if matches!(status.as_str(), "completed" | "failed") {
                return Ok(kill);
            }
            if let Some((_, fence)) = own.filter(|o| o.0 == ORPHANED) {
                break fence;
            }
            if hist::now() > deadline {
                bail!("net-chaos round {idx}: {} was not orphaned within {WAIT_S} s", crate::check::short(hid));
            }
            std::thread::sleep(Duration::from_millis(3));
        };
        if let (None, Some(t)) = (kill.orphan_seen_after_s, kill.t_kill) {
            kill.orphan_seen_after_s = Some(hist::now() - t);
        }
        let s = st.spawn_worker(idx, hid, "recover", Some(fence))?;
        kill.standbys.push(st.table.procs[s].name.clone());
        let deadline = hist::now() + WAIT_S;
        while st.table.procs[s].alive() && hist::now() < deadline {
            st.reap()?;
            std::thread::sleep(Duration::from_millis(3));
        }
        if st.table.procs[s].alive() {
            bail!("net-chaos round {idx}: standby {} did not finish within {WAIT_S} s", st.table.procs[s].name);
        }
    }
    bail!("net-chaos round {idx}: {} not finished after {max_standbys} standbys", crate::check::short(hid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_has_every_moment_early_and_kills_with_work_on_both_sides() {
        for seed in 0..200 {
            let p = plan(seed, 4, 6);
            assert_eq!(p, plan(seed, 4, 6), "seeded");
            for m in [Moment::BetweenShips, Moment::FrameInFlight, Moment::AckInFlight] {
                assert!(p[..3].iter().any(|(x, _)| *x == m), "seed {seed}: {p:?}");
            }
            assert!(p.iter().all(|(_, k)| (1..=4).contains(k)), "seed {seed}: {p:?}");
            let two = plan(seed, 2, 3);
            assert!(two.iter().any(|(m, _)| *m == Moment::BetweenShips), "seed {seed}: {two:?}");
            assert!(two.iter().any(|(m, _)| *m != Moment::BetweenShips), "seed {seed}: {two:?}");
            assert!(two.iter().all(|(_, k)| *k == 1), "3 checkpoints: the kill is at seq 1");
        }
    }
}
