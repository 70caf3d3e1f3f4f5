//! Link faults between hosts (needs root: CI runs as root). Each host's
//! link proxy runs inside the host's own network namespace, between its
//! shippers and the peer host's transport server; a 3-host round with
//! kill, link and partition nemeses must hold every invariant with the
//! network ones (peer-acks, sync-ack, converge) exercised, every host's
//! proxy must have carried its shipping, and a partition must cut proxied
//! traffic too (no ack crosses a blocked link while it stands).
use crate::common::*;
use serde_json::Value;
use std::path::Path;

fn lines(p: &Path) -> Vec<Value> {
    let text = crate::common::history_text(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

#[test]
fn link_faults_between_hosts_hold_every_invariant() {
    let round = hosts::Hosts {
        hosts: 3,
        seed: 17,
        // long enough that the seeded schedule reaches a partition even
        // on a quiet machine (60 chunks finished in 3.6 s, 10 faults, none)
        chunks: 240,
        nemesis: "kill,link,partition",
        fault_interval: "0.2,0.5",
    };
    let r = hosts::run_hosts("hosts-link", &round, &[]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let by_kind = &r.totals()["faults_by_kind"];
    assert!(by_kind["link"].as_u64().unwrap_or(0) >= 2, "too few link faults injected: {by_kind}\n{}", r.dump());
    assert!(by_kind["partition"].as_u64().unwrap_or(0) >= 1, "no partition injected: {by_kind}\n{}", r.dump());
    // 3 hosts × 2 handoffs
    assert_eq!(r.checked("converge"), 6, "{}", r.dump());
    assert!(r.checked("sync-ack") > 0, "{}", r.dump());
    assert!(r.checked("peer-acks") > 0, "no acknowledgement checked against a peer log: {}", r.dump());

    let round = r.out.join("round-0000");
    let n = 3u64;
    let mut acks_total = 0;
    let proxies: Vec<Vec<Value>> = (0..n)
        .map(|k| {
            let dir = round.join(format!("h{k}"));
            // the proxy ran in this host's namespace, in front of the peer's server
            let hist = lines(&dir.join("history.jsonl"));
            let spawn = hist
                .iter()
                .find(|e| e["op"] == "spawn" && e["role"] == "proxy")
                .unwrap_or_else(|| panic!("h{k}: no proxy started"));
            assert!(spawn["netns"].as_str().is_some_and(|ns| ns.ends_with(&format!("-h{k}"))), "{spawn}");
            assert_eq!(spawn["upstream"], format!("10.77.0.{}:7707", (k + 1) % n + 1), "{spawn}");
            let rec = lines(&dir.join("proxy.jsonl"));
            let acks = rec.iter().filter(|a| a["event"] == "ack").count();
            assert!(acks > 0, "h{k}: its shippers did not ship through its proxy");
            acks_total += acks;
            rec
        })
        .collect();
    assert!(acks_total > 0);

    // While a partition blocks a host's traffic to or from its peer, that
    // host's proxy forwards no ack (from 0.5 s after the rules are in: an
    // ack of a frame that arrived before them may still be on its way on a
    // loaded machine).
    let net = lines(&round.join("net-history.jsonl"));
    let mut starts: Vec<&Value> = Vec::new();
    let mut windows = 0;
    for e in net.iter().filter(|e| e["op"] == "nemesis" && e["kind"] == "partition") {
        if e["phase"] == "start" {
            starts.push(e);
            continue;
        }
        let Some(s) = starts.iter().find(|s| s["fault_id"] == e["fault_id"]) else { continue };
        let (from_t, to_t) = (s["t"].as_f64().unwrap() + 0.5, e["heal_started"].as_f64().unwrap());
        if to_t <= from_t {
            continue;
        }
        for b in s["blocked"].as_array().unwrap() {
            let (x, y) = (b[0].as_u64().unwrap(), b[1].as_u64().unwrap());
            // x's packets to y dropped: x's shipping to y (y its peer), or
            // y's acks back from x (x y's peer)
            for host in [x, y] {
                let peer = (host + 1) % n;
                if (host == x && peer == y) || (host == y && peer == x) {
                    windows += 1;
                    let through: Vec<&Value> = proxies[host as usize]
                        .iter()
                        .filter(|a| a["event"] != "sent")
                        .filter(|a| a["t"].as_f64().is_some_and(|t| t > from_t && t < to_t))
                        .collect();
                    assert!(through.is_empty(), "h{host}'s proxy forwarded acks across a partition ({s}): {through:?}");
                }
            }
        }
    }
    assert!(windows > 0, "no partition cut a proxied link long enough to check: {net:?}");

    let (code, out) = analyze(&r.out);
    assert_eq!(code, 0, "{out}");
}
