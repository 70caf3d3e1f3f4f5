//! The transport-log reader (§8.1, §8.3): one line of UTF-8 JSON per
//! record, the envelope header first, then checkpoints; whatever is not a
//! readable record is skipped and counted, never fatal.

use serde_json::Value;

/// `DHP_TRANSPORT_MAX_LINE_BYTES`'s default (§12).
pub const DEFAULT_MAX_LINE_BYTES: usize = 2_000_000;

/// One non-blank line of a log.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// An `envelope` record: its `envelope` member (`null` when missing).
    Envelope(Value),
    Checkpoint(Checkpoint),
    /// Not a readable record; why (for people).
    Skipped(String),
}

/// A `checkpoint` record.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub seq: u64,
    /// Always an object.
    pub state: Value,
    /// As written (`None` when missing or not a string).
    pub state_hash: Option<String>,
    /// The whole record (for `at`, `hid`, `prev`).
    pub record: Value,
}

/// Read a log's bytes. Blank lines are left out; a line longer than
/// `max_line_bytes`, not UTF-8, not JSON, not an object with a string
/// `type`, of an unknown type, a checkpoint before the header, with a
/// `state` that is not an object or a `seq` that is not a non-negative
/// integer is [`Line::Skipped`].
pub fn parse(bytes: &[u8], max_line_bytes: usize) -> Vec<Line> {
    let mut out = Vec::new();
    let mut header_seen = false;
    for raw in bytes.split(|b| *b == b'\n') {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let line = one(raw, max_line_bytes, header_seen);
        header_seen |= matches!(line, Line::Envelope(_));
        out.push(line);
    }
    out
}

fn one(raw: &[u8], max: usize, header_seen: bool) -> Line {
    if raw.len() > max {
        return Line::Skipped(format!("line of {} bytes exceeds {max}", raw.len()));
    }
    let Ok(text) = std::str::from_utf8(raw) else { return Line::Skipped("not UTF-8".into()) };
    let rec: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Line::Skipped(format!("not JSON: {e}")),
    };
    match rec.get("type").and_then(Value::as_str) {
        Some("envelope") => Line::Envelope(rec.get("envelope").cloned().unwrap_or(Value::Null)),
        Some("checkpoint") if !header_seen => Line::Skipped("checkpoint before the header".into()),
        Some("checkpoint") => {
            let Some(seq) = rec.get("seq").and_then(Value::as_u64) else {
                return Line::Skipped("seq is not a non-negative integer".into());
            };
            let Some(state) = rec.get("state").filter(|s| s.is_object()).cloned() else {
                return Line::Skipped("state is not an object".into());
            };
            let state_hash = rec.get("state_hash").and_then(Value::as_str).map(String::from);
            Line::Checkpoint(Checkpoint { seq, state, state_hash, record: rec })
        }
        Some(other) => Line::Skipped(format!("unknown type {other:?}")),
        None => Line::Skipped("not an object with a string type".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_of_8_3() {
        let log = b"{\"type\": \"checkpoint\", \"seq\": 0, \"state\": {}}\n\
{\"envelope\": {\"a\": 1}, \"type\": \"envelope\"}\n\
\n\
{\"seq\": 0, \"state\": {\"n\": 1}, \"state_hash\": \"h\", \"type\": \"checkpoint\"}\n\
{\"seq\": -1, \"state\": {}, \"type\": \"checkpoint\"}\n\
{\"seq\": 1, \"state\": [], \"type\": \"checkpoint\"}\n\
{\"type\": \"gossip\"}\n\
[1, 2]\n\
\xff\xfe\n\
{\"seq\": 2, \"sta";
        let lines = parse(log, DEFAULT_MAX_LINE_BYTES);
        let kinds: Vec<&str> = lines
            .iter()
            .map(|l| match l {
                Line::Envelope(_) => "envelope",
                Line::Checkpoint(_) => "checkpoint",
                Line::Skipped(_) => "skipped",
            })
            .collect();
        assert_eq!(
            kinds,
            ["skipped", "envelope", "checkpoint", "skipped", "skipped", "skipped", "skipped", "skipped", "skipped"]
        );
        assert!(matches!(&lines[2], Line::Checkpoint(c) if c.seq == 0 && c.state_hash.as_deref() == Some("h")));
        assert!(matches!(&parse(&[b'{'; 10], 9)[0], Line::Skipped(why) if why.contains("exceeds")));
    }
}
