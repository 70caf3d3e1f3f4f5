//! Reading stored JSON however deeply the reference nested it.
//!
//! serde_json stops at 128 levels; Python's `json` writes and reads about
//! 1,000 (its recursion limit), so an envelope the reference accepts could
//! not be loaded here: `dhp status` failed and every supervisor scan that
//! touched the row failed with it. Text that trips serde_json's limit is
//! parsed again without the limit, on a thread whose stack is sized for the
//! depth, after a byte scan has checked the depth against [`MAX_DEPTH`] (an
//! unbounded recursive parse of hostile text would overflow the stack).

use crate::error::{Error, Result};
use crate::json;
use serde::Deserialize;
use serde_json::Value;

/// Deepest nesting read from the store: what Python's default recursion
/// limit lets the reference write (it fails at ~995 levels). The parsed
/// value is then dumped, cloned and dropped recursively on the caller's
/// thread; at this depth that fits a default 2 MiB thread even in a debug
/// build (tested below; 1 MiB does not), and release frames are smaller.
pub const MAX_DEPTH: usize = 1_000;

/// Stack for the deep parse: generous per level (a debug build's parser
/// frames are a few hundred bytes each), reserved lazily by the OS.
const STACK_BYTES: usize = 64 * 1024 * 1024;

/// Parse stored JSON text (an envelope, a checkpoint state).
pub fn parse(text: &str) -> Result<Value> {
    match json::parse(text) {
        Err(Error::Json { detail: msg, .. }) if msg.contains("recursion limit exceeded") => parse_deep(text),
        other => other,
    }
}

/// Nesting depth of JSON text: brackets outside strings.
pub fn depth(text: &str) -> usize {
    let (mut cur, mut max, mut in_str, mut esc) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_str {
            match b {
                _ if esc => esc = false,
                b'\\' => esc = true,
                b'"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                cur += 1;
                max = max.max(cur);
            }
            b']' | b'}' => cur = cur.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn parse_deep(text: &str) -> Result<Value> {
    let d = depth(text);
    if d > MAX_DEPTH {
        return Err(Error::json(format!("nesting depth {d} is over the limit of {MAX_DEPTH}")));
    }
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("dhp-deep-json".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(s, || {
                let mut de = serde_json::Deserializer::from_str(text);
                de.disable_recursion_limit();
                let v = Value::deserialize(&mut de).map_err(Error::json_from)?;
                de.end().map_err(Error::json_from)?;
                Ok(v)
            })
            .map_err(|e| Error::Json {
                detail: format!("cannot start the deep-JSON parser thread: {e}"),
                source: Some(Box::new(e)),
            })?;
        worker.join().unwrap_or_else(|_| Err(Error::json("the deep-JSON parser failed")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!("{}{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn reads_what_serde_json_refuses_up_to_the_limit() {
        assert!(json::parse(&nested(500)).is_err(), "serde_json's own limit is 128");
        let v = parse(&nested(MAX_DEPTH)).unwrap();
        assert_eq!(json::dumps(&v).unwrap().len(), 2 * MAX_DEPTH);
        assert!(
            matches!(parse(&nested(MAX_DEPTH + 1)), Err(Error::Json { detail: m, .. }) if m.contains("over the limit"))
        );
    }

    #[test]
    fn the_deepest_value_is_usable_on_a_default_thread() {
        let text = nested(MAX_DEPTH);
        let t = std::thread::Builder::new().stack_size(2 * 1024 * 1024).spawn(move || {
            let v = parse(&text).unwrap();
            let copy = v.clone();
            assert_eq!(json::dumps(&copy).unwrap(), text);
            assert_eq!(json::canonical(&v).unwrap().len(), text.len());
        });
        t.unwrap().join().unwrap();
    }

    #[test]
    fn depth_ignores_brackets_in_strings() {
        assert_eq!(depth(r#"{"a": "[[[{{\"", "b": [[1]]}"#), 3);
        assert!(matches!(parse(&format!("{}x", nested(300))), Err(Error::Json { .. })));
    }
}
