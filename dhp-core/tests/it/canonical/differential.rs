//! Differential property test against the reference: a seeded batch of
//! random JSON texts (tricky floats, big integers, -0, unicode from every
//! plane incl. U+2028, DEL and control characters, escapes of every kind,
//! duplicate keys, nesting) goes through our parser and writers and, in ONE
//! Python process, through the reference's. Byte for byte equal: the
//! canonical form (ids), the `json.dumps(sort_keys=True)` checkpoint form
//! (state hashes), and the ids of an envelope built around each value.
//!
//! The seed is printed; `DHP_DIFF_SEED=N` replays a batch and
//! `DHP_DIFF_CASES=N` changes its size (default 400).

use dhp_core::{envelope, json};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::process::Command;

const CREATED_AT: &str = "2026-11-30T12:00:00.123456+00:00";

const FLOATS: &[&str] = &[
    "1e16",
    "1.5e-7",
    "-0.0",
    "5e-324",
    "1.7976931348623157e308",
    "0.1",
    "1e22",
    "1e21",
    "1e-5",
    "0.0001",
    "123456789012345678901234567890.5",
    "2.5E+3",
    "1E5",
    "-1.0e-310",
    "9007199254740993.0",
    "100.0",
    "1.0",
    "2.2250738585072014e-308",
    "4.9406564584124654e-324",
    "0.30000000000000004",
    "-1e-7",
    "1e15",
    "12345678.9",
];
const INTS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "9007199254740993",
    "18446744073709551616",
    "-9223372036854775809",
    "1180591620717411303424",
    "-1180591620717411303424",
    "123456789012345678901234567890123456789",
];

struct Gen {
    rng: StdRng,
}

impl Gen {
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.rng.gen_range(0..xs.len())]
    }

    fn float(&mut self) -> String {
        match self.rng.gen_range(0..4) {
            0 => self.pick(FLOATS).to_string(),
            1 => loop {
                // Any finite double, in Rust's shortest round-trip form.
                let f = f64::from_bits(self.rng.gen());
                if f.is_finite() {
                    break if self.rng.gen() { format!("{f:e}") } else { format!("{f:?}") };
                }
            },
            _ => loop {
                // A decimal literal with many digits and any exponent.
                let first = char::from(b'1' + self.rng.gen_range(0..9));
                let rest: String =
                    (0..self.rng.gen_range(0..24)).map(|_| char::from(b'0' + self.rng.gen_range(0..10))).collect();
                let frac: String =
                    (0..self.rng.gen_range(1..8)).map(|_| char::from(b'0' + self.rng.gen_range(0..10))).collect();
                let sign = if self.rng.gen() { "-" } else { "" };
                let text = format!("{sign}{first}{rest}.{frac}e{}", self.rng.gen_range(-340..300));
                if text.parse::<f64>().is_ok_and(f64::is_finite) {
                    break text;
                }
            },
        }
    }

    fn int(&mut self) -> String {
        match self.rng.gen_range(0..3) {
            0 => self.pick(INTS).to_string(),
            1 => self.rng.gen::<i64>().to_string(),
            _ => {
                let n = self.rng.gen_range(1..60);
                let mut s: String = (0..n).map(|_| char::from(b'0' + self.rng.gen_range(0..10))).collect();
                s = s.trim_start_matches('0').to_string();
                if s.is_empty() {
                    s.push('7');
                }
                if self.rng.gen() {
                    s.insert(0, '-');
                }
                s
            }
        }
    }

    fn char(&mut self) -> char {
        let c = match self.rng.gen_range(0..9) {
            0 => self.rng.gen_range(0x00..0x20),
            1 => 0x7f,
            2 => *[0x2028u32, 0x2029, 0xfeff, 0xfffd, 0x85, 0xa0].get(self.rng.gen_range(0..6)).unwrap_or(&0x2028),
            3 => self.rng.gen_range(0x80..0x800),
            4 => self.rng.gen_range(0x800..0xd800),
            5 => self.rng.gen_range(0xe000..0x10000),
            6 => self.rng.gen_range(0x10000..0x110000),
            7 => u32::from(*b"\"\\/".get(self.rng.gen_range(0..3)).unwrap_or(&b'"')),
            _ => self.rng.gen_range(0x20..0x7f),
        };
        char::from_u32(c).unwrap_or('x')
    }

    /// A JSON string literal; each character written raw or escaped in one
    /// of the ways JSON allows (raw only where that is legal).
    fn string(&mut self) -> String {
        let n = self.rng.gen_range(0..12);
        let mut out = String::from("\"");
        for _ in 0..n {
            let c = self.char();
            let esc = self.rng.gen_range(0..3);
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '/' if esc == 0 => out.push_str("\\/"),
                '\n' if esc == 0 => out.push_str("\\n"),
                '\t' if esc == 0 => out.push_str("\\t"),
                c if (c as u32) < 0x20 || esc == 1 => {
                    let mut buf = [0u16; 2];
                    for u in c.encode_utf16(&mut buf) {
                        let _ = write!(out, "\\u{:04x}", u);
                    }
                }
                c if esc == 2 && (c as u32) < 0x10000 => {
                    let _ = write!(out, "\\u{:04X}", c as u32);
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    fn value(&mut self, depth: u32) -> String {
        let leaf = depth >= 4 || self.rng.gen_range(0..3) == 0;
        if leaf {
            return match self.rng.gen_range(0..7) {
                0 | 1 => self.float(),
                2 | 3 => self.int(),
                4 => self.string(),
                5 => ["true", "false", "null"][self.rng.gen_range(0..3)].to_string(),
                _ => "[]".into(),
            };
        }
        if self.rng.gen() {
            let items: Vec<String> = (0..self.rng.gen_range(0..5)).map(|_| self.value(depth + 1)).collect();
            format!("[{}]", items.join(", "))
        } else {
            self.object(depth)
        }
    }

    fn object(&mut self, depth: u32) -> String {
        let mut keys: Vec<String> = (0..self.rng.gen_range(0..5)).map(|_| self.string()).collect();
        if !keys.is_empty() && self.rng.gen_range(0..8) == 0 {
            keys.push(keys[0].clone()); // duplicate key: the last one wins
        }
        let members: Vec<String> = keys.into_iter().map(|k| format!("{k}: {}", self.value(depth + 1))).collect();
        format!("{{{}}}", members.join(","))
    }
}

/// What the reference computes, per text, in one process.
const PY: &str = r#"
import hashlib, json, sys
from dhp import envelope as E
E.utcnow = lambda: sys.argv[2]
out = []
for text in json.load(open(sys.argv[1], encoding="utf-8")):
    v = json.loads(text)
    r = {}
    c = E.canonical(v)
    r["canonical_hex"] = c.hex()
    r["sha256"] = hashlib.sha256(c).hexdigest()
    if isinstance(v, dict):
        s = json.dumps(v, sort_keys=True)
        r["state_json"] = s
        r["state_hash"] = hashlib.sha256(s.encode()).hexdigest()
    env = E.build("diff.kind", {"v": v}, {"type": "object"})
    r["handoff_id"] = env["handoff_id"]
    r["input_hash"] = env["task"]["input_hash"]
    r["trace_id"] = env["provenance"]["trace_id"]
    r["idempotency_key"] = env["delivery"]["idempotency_key"]
    out.append(r)
json.dump(out, sys.stdout)
"#;

fn ours(text: &str) -> Value {
    let v = json::parse(text).unwrap_or_else(|e| panic!("we cannot parse {text:?}: {e}"));
    let c = json::canonical(&v).unwrap_or_else(|e| panic!("canonical of {text:?}: {e}"));
    let mut r = json!({"canonical_hex": hex::encode(&c), "sha256": json::sha256_hex(&c)});
    if v.is_object() {
        let (s, h) = json::state_text_and_hash(&v).unwrap();
        r["state_json"] = s.into();
        r["state_hash"] = h.into();
    }
    let opts = envelope::BuildOptions { created_at: Some(CREATED_AT.into()), ..Default::default() };
    let env = envelope::build("diff.kind", json!({"v": v}), json!({"type": "object"}), opts).unwrap();
    r["handoff_id"] = env["handoff_id"].clone();
    r["input_hash"] = env["task"]["input_hash"].clone();
    r["trace_id"] = env["provenance"]["trace_id"].clone();
    r["idempotency_key"] = env["delivery"]["idempotency_key"].clone();
    r
}

#[test]
fn random_values_match_the_reference_byte_for_byte() {
    let seed: u64 = std::env::var("DHP_DIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    let n: usize = std::env::var("DHP_DIFF_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(400);
    println!("canonical_differential: seed {seed} ({n} cases); replay with DHP_DIFF_SEED={seed}");
    let mut g = Gen { rng: StdRng::seed_from_u64(seed) };
    // Mostly objects (a checkpoint state must be one), some bare values.
    let texts: Vec<String> = (0..n).map(|i| if i % 4 == 3 { g.value(0) } else { g.object(0) }).collect();

    let dir = tempfile::tempdir().unwrap();
    let batch = dir.path().join("batch.json");
    std::fs::write(&batch, serde_json::to_string(&texts).unwrap()).unwrap();
    let out = Command::new(dhp_testkit::python())
        .args(["-c", PY, batch.to_str().unwrap(), CREATED_AT])
        .output()
        .expect("run the reference");
    assert!(out.status.success(), "seed {seed}: reference failed: {}", String::from_utf8_lossy(&out.stderr));
    let theirs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(theirs.len(), texts.len());

    let mut diffs = Vec::new();
    for (i, (text, want)) in texts.iter().zip(&theirs).enumerate() {
        let got = ours(text);
        if &got != want {
            diffs.push(format!("case {i}: {text}\n  ours:   {got}\n  theirs: {want}"));
        }
    }
    assert!(
        diffs.is_empty(),
        "seed {seed}: {} of {n} differ:\n{}",
        diffs.len(),
        diffs.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
}
