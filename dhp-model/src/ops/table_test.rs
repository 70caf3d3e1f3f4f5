//! docs/state-machine.md's table, parsed and compared cell by cell with the
//! model's operations: each "—" must refuse and leave the whole state
//! unchanged, each status must be the status after.

use super::*;
use crate::state::{Delivery, Handoff, Ownership, State, Status, ORPHANED};

const DOC: &str = include_str!("../../../docs/state-machine.md");
const T: Time = 1_000;
const TTL: Time = 6_000;

/// A store with one handoff "h" in `status`, consistent with its ownership
/// row, and supervisor "s" leading.
fn store(status: Status) -> State {
    let mut s = State::default();
    let mut h = Handoff::pending(Default::default());
    h.status = status;
    let row = |holder: &str, fence| Ownership { holder: holder.into(), fence, lease_expires_at: T + TTL, ttl: TTL };
    match status {
        Status::Running | Status::Suspended => {
            s.ownership.insert("h".into(), row("w", 0));
        }
        Status::Orphaned => {
            s.ownership.insert("h".into(), Ownership { lease_expires_at: 0, ..row(ORPHANED, 1) });
        }
        Status::Completed => h.delivery = Some(Delivery { result: "r".into(), completed_at: 0, acked: false }),
        _ => {}
    }
    s.handoffs.insert("h".into(), h);
    s.leadership = Some(crate::state::Leadership { holder: "s".into(), expires_at: T + 5_000 });
    s
}

fn run(op: &str, s: &mut State) {
    let lease = Lease { hid: "h".into(), holder: "w".into(), fence: 0 };
    let _ = match op {
        "claim" => claim(s, "h", "w2", TTL, T).map(drop),
        "write" => heartbeat(s, &lease, T).map(drop),
        "release" => release(s, &lease, T),
        "complete" => complete(s, &lease, "r2", T),
        "fail" => fail(s, &lease, "bad", T),
        "ack" => ack(s, "h"),
        "suspend" => suspend(s, "h").map(drop),
        "recover" => {
            // The recoverer presents the fence it read from the row.
            let seen = s.ownership.get("h").map_or(0, |o| o.fence);
            recover(s, "h", "w2", seen, TTL, T).map(drop)
        }
        // setup() expired the lease; dead_letter's also exhausted the attempts.
        "orphan" | "dead_letter" => orphan(s, "s", "h", OrphanReason::LeaseExpired, false, T).map(drop),
        "budget_kill" => {
            let h = s.handoffs.get_mut("h").expect("h");
            h.budget.max_steps = Some(1);
            h.steps = 2;
            budget_kill(s, "s", "h", T).map(drop)
        }
        other => panic!("docs/state-machine.md names an operation the model lacks: {other}"),
    };
}

/// The setup a column needs before the operation, applied to the
/// unchanged-state comparison too (so only the operation's effect counts).
fn setup(op: &str, s: &mut State) {
    match op {
        "orphan" | "dead_letter" => s.ownership.values_mut().for_each(|o| {
            if o.holder != ORPHANED {
                o.lease_expires_at = T - 1
            }
        }),
        _ => {}
    }
}

#[test]
fn every_cell_of_the_state_machine_table() {
    let rows: Vec<Vec<&str>> = DOC
        .lines()
        .skip_while(|l| !l.starts_with("| status |"))
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().trim_matches('`')).collect())
        .collect();
    assert!(rows.len() == 8, "the table has a header, a rule and six statuses: {rows:?}");
    let ops = &rows[0][1..];
    let mut cells = 0;
    for row in &rows[2..] {
        let status: Status = row[0].parse().expect("a status");
        for (op, want) in ops.iter().zip(&row[1..]) {
            let mut before = store(status);
            if *op == "dead_letter" {
                before.handoffs.get_mut("h").expect("h").attempt = 3;
            }
            setup(op, &mut before);
            let mut after = before.clone();
            run(op, &mut after);
            let got = after.handoffs["h"].status;
            if *want == "—" {
                // budget_kill's setup changes the counters; compare the rest.
                let mut b = before.clone();
                if *op == "budget_kill" {
                    b.handoffs = after.handoffs.clone();
                    assert_eq!(got, status, "{op} in {status} changed the status");
                }
                assert_eq!(after, b, "{op} in {status} must be refused and change nothing");
            } else {
                assert_eq!(got.as_str(), *want, "{op} in {status}");
            }
            cells += 1;
        }
    }
    assert_eq!(cells, 66);
}
