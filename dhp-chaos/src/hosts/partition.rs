//! Partitions between hosts: iptables DROP rules inside the receiving
//! host's namespace, healed after a seeded time.

use super::net::{in_ns, Net};
use anyhow::Result;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::{json, Value};

/// Seconds a partition lasts: uniform in this range (seeded).
pub const SECONDS: (f64, f64) = (0.5, 3.0);

/// One partition: the directed links that drop every packet.
#[derive(Debug, Clone)]
pub struct Cut {
    /// `isolate` (one host from the rest), `split` (two halves), `one-way`.
    pub shape: &'static str,
    /// Two sides, or `[from], [to]` for one-way loss.
    pub groups: [Vec<u32>; 2],
    /// (from, to): packets from `from` to `to` are dropped.
    pub blocked: Vec<(u32, u32)>,
    /// When the partition heals, epoch seconds.
    pub heal_at: f64,
    /// The injector's `fault_id` for it.
    pub fault_id: u64,
}

impl Cut {
    /// Draw a partition of `n` hosts (n ≥ 2).
    pub fn draw(rng: &mut StdRng, n: u32, now: f64, fault_id: u64) -> Cut {
        let mut ids: Vec<u32> = (0..n).collect();
        ids.shuffle(rng);
        let (shape, a, b, both) = match rng.gen_range(0..3) {
            0 => ("isolate", vec![ids[0]], ids[1..].to_vec(), true),
            1 => {
                let k = rng.gen_range(1..n) as usize;
                ("split", ids[..k].to_vec(), ids[k..].to_vec(), true)
            }
            _ => ("one-way", vec![ids[0]], vec![ids[1]], false),
        };
        let mut blocked = Vec::new();
        for &x in &a {
            for &y in &b {
                blocked.push((x, y));
                if both {
                    blocked.push((y, x));
                }
            }
        }
        let secs = rng.gen_range(SECONDS.0..=SECONDS.1);
        Cut { shape, groups: [a, b], blocked, heal_at: now + secs, fault_id }
    }

    /// Does this cut stop `from`'s packets reaching `to`?
    pub fn blocks(&self, from: u32, to: u32) -> bool {
        self.blocked.contains(&(from, to))
    }

    /// The partition as the fields of its `nemesis` history record.
    pub fn to_json(&self) -> Value {
        json!({"kind": "partition", "fault_id": self.fault_id, "shape": self.shape, "groups": self.groups,
               "blocked": self.blocked, "heal_at": self.heal_at})
    }

    /// Install the DROP rules (each in the receiving host's namespace);
    /// `between` runs after each rule (the harness keeps reaping).
    pub fn apply(&self, net: &Net, between: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        for &(from, to) in &self.blocked {
            let (src, dst) = (&net.hosts[from as usize], &net.hosts[to as usize]);
            in_ns(&dst.netns, &["iptables", "-w", "-A", "INPUT", "-s", &src.addr, "-j", "DROP"])?;
            between()?;
        }
        Ok(())
    }

    /// Remove the rules again (the namespaces hold no other INPUT rules).
    pub fn heal(&self, net: &Net, between: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        let mut dsts: Vec<u32> = self.blocked.iter().map(|b| b.1).collect();
        dsts.sort_unstable();
        dsts.dedup();
        for to in dsts {
            in_ns(&net.hosts[to as usize].netns, &["iptables", "-w", "-F", "INPUT"])?;
            between()?;
        }
        Ok(())
    }
}
