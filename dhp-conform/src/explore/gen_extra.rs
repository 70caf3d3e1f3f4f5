//! Generation of the steps added after the first families: odd worker
//! ids, an integral float result, bundles resumed (tampered or not),
//! transport logs shipped and ingested, effects, capabilities and
//! awaiting an approval. Each is drawn with a share of its family's steps.

use super::gen::{Family, Features, Rng, Step};
use super::world::World;

/// A step of family `f` from this module, or `None` (the family's
/// original steps). `(h, w)`: a running handoff (if any) and a worker
/// that usually holds it.
pub fn step(r: &mut Rng, world: &World, f: Family, feats: Features, (h, w): (u8, u8)) -> Option<Step> {
    match f {
        Family::Heartbeat if feats.store && r.chance(30) => Some(Step::Retune { h, long: r.chance(60) }),
        // up to the repeat limit often enough that a scan meets it
        Family::Heartbeat if feats.stall && r.chance(50) => Some(Step::Activity { h, w, n: r.pick(&[1, 9, 10, 10]) }),
        Family::Dispatch if feats.canonical && r.chance(15) => {
            Some(Step::Canonical { which: r.below(CANONICAL_TEXTS.len() as u64) as u8 })
        }
        Family::Claim if r.chance(20) => Some(Step::BadId { h: pending_or(world, r, h), w, how: r.below(4) as u8 }),
        Family::Complete if r.chance(12) => Some(Step::CompleteIntegral { h, w }),
        Family::Suspend if !world.bundles.is_empty() && r.chance(65) => {
            let hs: Vec<u8> = world.bundles.keys().copied().collect();
            Some(Step::Resume { h: r.pick(&hs), tamper: r.pick(&[0, 0, 1, 2]) })
        }
        Family::Approvals if world.approval_count(h) > 0 && r.chance(40) => {
            Some(Step::Await { h, nth: r.below(3) as u8 })
        }
        Family::Transport => {
            // a handoff with checkpoints ships the interesting log
            let with: Vec<u8> = (0..world.hids.len() as u8).filter(|x| world.checkpoint_count(*x) > 0).collect();
            let h = if !with.is_empty() && r.chance(80) { r.pick(&with) } else { h };
            Some(Step::Ship { h, how: r.pick(&[0, 0, 1, 2, 3, 4]) })
        }
        Family::Store => Some(match r.below(3) {
            0 if feats.store => Step::NewerSchema,
            1 if feats.sqlite => Step::LockedWrite { h, w },
            _ => Step::OpenRace { n: 2 + r.below(3) as u8 },
        }),
        Family::Effects => {
            if feats.effects && (!feats.capabilities || r.chance(60)) {
                Some(Step::Effect { h, w, step: r.below(3) as u8, r: r.below(4) as u8 })
            } else {
                Some(Step::Capability { h, w, which: r.below(CAPABILITY.len() as u64) as u8 })
            }
        }
        _ => None,
    }
}

/// A pending handoff if there is one (a claim there would succeed under
/// a good id), else `h`.
fn pending_or(world: &World, r: &mut Rng, h: u8) -> u8 {
    let hs: Vec<u8> = (0..world.hids.len() as u8).filter(|x| world.status_str(*x) == "pending").collect();
    if hs.is_empty() {
        h
    } else {
        r.pick(&hs)
    }
}

/// The worker id a [`Step::BadId`] claims under: malformed (`how` 0),
/// a good id with a trailing newline (1), reserved `__name__` (2), dots
/// only (3). PROTOCOL §5.1 / §5.6: every one is a ValidationError.
pub fn bad_worker(w: u8, how: u8) -> String {
    match how % 4 {
        0 => format!("W {w}!"),
        1 => format!("w{w}\n"),
        2 => format!("__w{w}__"),
        _ => "..".to_string(),
    }
}

/// Texts a [`Step::Canonical`] sends: what a non-canonical writer changes.
pub const CANONICAL_TEXTS: [&str; 3] = [
    r#"{"f": 1.0, "big": 9007199254740993, "u": "Zürich ☃ 😀", "e": 1.5e-7, "z": -0.0}"#,
    r#"{"b": [1, 2.50, {"y": null, "x": true}], "a": "\u00e9\n\t"}"#,
    r#"[10.0, 123456789012345678901234567890, 1e300, "\ud83d\ude00"]"#,
];

/// Whether handoff `h`'s output schema is a draft-04 one (§6.3: read as
/// the draft its `$schema` names).
pub fn draft4_handoff(h: u8) -> bool {
    h == 2
}

/// That schema: `x` a number above 0, exclusive by draft-04's boolean
/// `exclusiveMinimum` (which 2020-12 does not read that way).
pub fn draft4_schema() -> serde_json::Value {
    serde_json::json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
                       "properties": {"x": {"type": "number", "minimum": 0, "exclusiveMinimum": true}}})
}

/// The result a [`Step::CompleteIntegral`] sends: `{"x": 1.0}` (an
/// integer), or for the draft-04 handoff `{"x": 0}` (excluded there).
pub fn edge_result(h: u8) -> serde_json::Value {
    let text = if draft4_handoff(h) { r#"{"x": 0}"# } else { r#"{"x": 1.0}"# };
    serde_json::from_str(text).unwrap_or(serde_json::Value::Null)
}

/// The digest an [`Step::Activity`] repeats.
pub fn activity_digest(h: u8) -> String {
    format!("digest-{h}")
}

/// `DHP_STALL_MAX_REPEATS` (default 10, the runner's profiles leave it).
pub const STALL_MAX_REPEATS: u32 = 10;

/// The capabilities a [`Step::Capability`] asks for: (domain, resource).
/// Handoff 1 declares `network: [api.example.com]`; the others none.
pub const CAPABILITY: [(&str, &str); 3] =
    [("network", "api.example.com"), ("network", "evil.example.com"), ("dhp", "checkpoint")];

/// Whether handoff `h`'s contract declares capabilities.
pub fn declares_capabilities(h: u8) -> bool {
    h == 1
}

/// Whether capability `which` is granted to handoff `h` (§6.5: only
/// what the contract declares, and the `dhp` domain; fail-closed).
pub fn granted(h: u8, which: u8) -> bool {
    let (domain, resource) = CAPABILITY[usize::from(which) % CAPABILITY.len()];
    domain == "dhp" || (declares_capabilities(h) && domain == "network" && resource == "api.example.com")
}
