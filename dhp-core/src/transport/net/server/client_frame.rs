//! A client's frame, parsed once from its line into the kind its `"type"`
//! names. Fields are read as leniently as the server always read them: a
//! field of the wrong type counts as absent, so every reply (and its text)
//! is the one the handlers gave when they dispatched on `msg["type"]`.
//! The fields are moved out of the parsed object, never copied: a
//! checkpoint's state is as big as the line cap allows.

use crate::json;
use serde::Deserialize;
use serde_json::{Map, Value};

/// The kinds of frame a client sends, by their wire `"type"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Hello,
    Envelope,
    Checkpoint,
    Bye,
}

/// A client frame.
#[derive(Debug, PartialEq)]
pub(super) enum ClientFrame {
    /// Binds the connection to a handoff.
    Hello(Hello),
    /// The handoff's envelope (`Null` when the field is missing).
    Envelope(Value),
    /// One checkpoint.
    Checkpoint(CheckpointFrame),
    /// The client is done: answered, then the connection closes.
    Bye,
}

/// A `hello` frame.
#[derive(Debug, PartialEq)]
pub(super) struct Hello {
    /// The shared token, when a string.
    pub(super) token: Option<String>,
    /// The handoff id, when a string (checked by the handler).
    pub(super) handoff_id: Option<String>,
}

/// A `checkpoint` frame.
#[derive(Debug, PartialEq)]
pub(super) struct CheckpointFrame {
    /// `handoff_id` when the frame has one: the text, or `None` for a
    /// value that is not a string (which names no handoff: refused).
    pub(super) handoff_id: Option<Option<String>>,
    /// The seq, when a non-negative integer.
    pub(super) seq: Option<i64>,
    /// The state, when an object.
    pub(super) state: Option<Value>,
    /// The claimed state hash, when a string.
    pub(super) state_hash: Option<String>,
    /// The checkpoint's time, when a string.
    pub(super) at: Option<String>,
    /// The binding fields of docs/log-chain.md (`hid`, `prev`) as sent,
    /// in an object for [`crate::transport::chain::claimed_prev`].
    pub(super) binding: Value,
}

/// Why a line is not a frame: each is answered with a refusal.
#[derive(Debug, PartialEq, thiserror::Error)]
pub(super) enum FrameError {
    /// Not JSON.
    #[error("bad frame: {0}")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("bad frame: not a JSON object")]
    NotObject,
    /// No `"type"`, one that is not a string, or not a kind of frame.
    #[error("unknown type")]
    UnknownType,
}

fn take_str(m: &mut Map<String, Value>, key: &str) -> Option<String> {
    match m.remove(key) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

impl ClientFrame {
    /// Parse one complete line.
    pub(super) fn parse(raw: &[u8]) -> Result<Self, FrameError> {
        let mut m = match json::parse_bytes(raw) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(FrameError::NotObject),
            Err(e) => return Err(FrameError::NotJson(e.to_string())),
        };
        let kind = m.get("type").and_then(|t| Kind::deserialize(t).ok()).ok_or(FrameError::UnknownType)?;
        Ok(match kind {
            Kind::Hello => ClientFrame::Hello(Hello {
                token: take_str(&mut m, "token"),
                handoff_id: take_str(&mut m, "handoff_id"),
            }),
            Kind::Envelope => ClientFrame::Envelope(m.remove("envelope").unwrap_or(Value::Null)),
            Kind::Bye => ClientFrame::Bye,
            Kind::Checkpoint => {
                let handoff_id = m.remove("handoff_id").map(|v| match v {
                    Value::String(s) => Some(s),
                    _ => None,
                });
                let seq = m.get("seq").filter(|v| v.is_number()).and_then(Value::as_i64).filter(|s| *s >= 0);
                let state = m.remove("state").filter(Value::is_object);
                let mut binding = Map::new();
                for key in ["hid", "prev"] {
                    if let Some(v) = m.remove(key) {
                        binding.insert(key.to_string(), v);
                    }
                }
                ClientFrame::Checkpoint(CheckpointFrame {
                    handoff_id,
                    seq,
                    state,
                    state_hash: take_str(&mut m, "state_hash"),
                    at: take_str(&mut m, "at"),
                    binding: Value::Object(binding),
                })
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<ClientFrame, FrameError> {
        ClientFrame::parse(v.to_string().as_bytes())
    }

    #[test]
    fn kinds_by_type_and_typed_errors() {
        assert!(matches!(ClientFrame::parse(b"{nope"), Err(FrameError::NotJson(_))));
        assert_eq!(ClientFrame::parse(b"[1]"), Err(FrameError::NotObject));
        for t in [json!({}), json!({"type": 5}), json!({"type": "Hello"}), json!({"type": "ship"})] {
            assert_eq!(parse(t.clone()), Err(FrameError::UnknownType), "{t}");
        }
        assert_eq!(parse(json!({"type": "bye", "x": 1})), Ok(ClientFrame::Bye));
        assert_eq!(parse(json!({"type": "envelope"})), Ok(ClientFrame::Envelope(Value::Null)));
        assert_eq!(parse(json!({"type": "envelope", "envelope": [1]})), Ok(ClientFrame::Envelope(json!([1]))));
        assert_eq!(
            parse(json!({"type": "hello", "token": 7, "handoff_id": "ab"})),
            Ok(ClientFrame::Hello(Hello { token: None, handoff_id: Some("ab".into()) }))
        );
    }

    #[test]
    fn checkpoint_fields_wrong_types_count_as_absent() {
        let Ok(ClientFrame::Checkpoint(c)) = parse(json!({
            "type": "checkpoint", "seq": 3, "state": {"n": 1}, "state_hash": "h", "at": "t", "hid": "x", "prev": null,
        })) else {
            panic!("not a checkpoint")
        };
        assert_eq!(c.handoff_id, None);
        assert_eq!(
            (c.seq, c.state, c.state_hash.as_deref(), c.at.as_deref()),
            (Some(3), Some(json!({"n": 1})), Some("h"), Some("t"))
        );
        assert_eq!(c.binding, json!({"hid": "x", "prev": null}));
        let Ok(ClientFrame::Checkpoint(c)) =
            parse(json!({"type": "checkpoint", "handoff_id": 1, "seq": -1, "state": [], "state_hash": 2}))
        else {
            panic!("not a checkpoint")
        };
        assert_eq!((c.handoff_id, c.seq, c.state, c.state_hash), (Some(None), None, None, None));
        assert_eq!(c.binding, json!({}));
        for seq in [json!(1.0), json!("1"), json!(true)] {
            let Ok(ClientFrame::Checkpoint(c)) = parse(json!({"type": "checkpoint", "seq": seq})) else { panic!() };
            assert_eq!(c.seq, None, "{seq}");
        }
    }
}
