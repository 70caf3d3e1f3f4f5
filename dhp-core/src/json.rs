//! JSON text exactly as the reference's Python writes it.
//!
//! DHP hashes and stores JSON text produced by Python's `json.dumps` in three
//! flavours, and a second implementation must reproduce each byte:
//!
//! | flavour | Python call | used for |
//! |---|---|---|
//! | [`canonical`] | `dumps(x, sort_keys=True, separators=(",",":"), ensure_ascii=False)` | `handoff_id`, `input_hash`, bundles |
//! | [`dumps_sorted`] | `dumps(x, sort_keys=True)` | checkpoint `state_json`/`state_hash`, transport log lines, TCP frames |
//! | [`dumps`] | `dumps(x)` (insertion order) | `handoffs.envelope_json` |
//!
//! Values are `serde_json::Value` built with `preserve_order` (Python dicts keep
//! insertion order) and `arbitrary_precision` (Python ints are unbounded).
//! Numbers are re-rendered the way Python would after `json.loads`: a literal
//! with `.`, `e` or `E` is a float printed with `repr` (`1e16` → `1e+16`,
//! `1E5` → `100000.0`), anything else is an integer printed in full. A float
//! that overflows to infinity is refused with [`Error::NonFinite`] instead of
//! Python's non-JSON `Infinity`.

use crate::error::{Error, Result};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

/// How a writer lays out text; the three public functions are the only
/// combinations the protocol uses.
#[derive(Clone, Copy)]
struct Style {
    sort_keys: bool,
    compact: bool,
    ensure_ascii: bool,
}

const CANONICAL: Style = Style { sort_keys: true, compact: true, ensure_ascii: false };
const SORTED: Style = Style { sort_keys: true, compact: false, ensure_ascii: true };
const PLAIN: Style = Style { sort_keys: false, compact: false, ensure_ascii: true };

/// Canonical bytes: the input of every content address.
pub fn canonical(v: &Value) -> Result<Vec<u8>> {
    let mut out = String::new();
    write_value(&mut out, v, CANONICAL)?;
    Ok(out.into_bytes())
}

/// Python `json.dumps(v, sort_keys=True)`: checkpoint state text and log lines.
pub fn dumps_sorted(v: &Value) -> Result<String> {
    let mut out = String::with_capacity(64);
    write_value(&mut out, v, SORTED)?;
    Ok(out)
}

/// Python `json.dumps(v)`: keys in insertion order, default separators, ASCII.
pub fn dumps(v: &Value) -> Result<String> {
    let mut out = String::new();
    write_value(&mut out, v, PLAIN)?;
    Ok(out)
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(data: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(data);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
    out
}

/// Parse JSON text. Duplicate keys keep the last value at the first key's
/// position, as Python's `dict` does.
pub fn parse(text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(Error::json_from)
}

/// Parse JSON bytes (must be UTF-8).
pub fn parse_bytes(data: &[u8]) -> Result<Value> {
    serde_json::from_slice(data).map_err(Error::json_from)
}

#[cfg(test)]
thread_local! {
    /// How many checkpoint states this thread serialised and hashed (unit
    /// tests count them per checkpoint).
    pub static STATE_HASHES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The text the store keeps in `state_json` and its hash (docs/PROTOCOL.md §2.3).
pub fn state_text_and_hash(state: &Value) -> Result<(String, String)> {
    #[cfg(test)]
    STATE_HASHES.with(|n| n.set(n.get() + 1));
    let text = dumps_sorted(state)?;
    let hash = sha256_hex(text.as_bytes());
    Ok((text, hash))
}

fn write_value(out: &mut String, v: &Value, st: Style) -> Result<()> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n)?,
        Value::String(s) => write_str(out, s, st.ensure_ascii),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(if st.compact { "," } else { ", " });
                }
                write_value(out, item, st)?;
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map, st)?,
    }
    Ok(())
}

fn write_object(out: &mut String, map: &Map<String, Value>, st: Style) -> Result<()> {
    out.push('{');
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    if st.sort_keys {
        // Rust's str ordering is code-point ordering, as is Python's.
        entries.sort_by(|a, b| a.0.cmp(b.0));
    }
    for (i, (k, val)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push_str(if st.compact { "," } else { ", " });
        }
        write_str(out, k, st.ensure_ascii);
        out.push_str(if st.compact { ":" } else { ": " });
        write_value(out, val, st)?;
    }
    out.push('}');
    Ok(())
}

fn write_str(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    // Runs that need no escape are copied whole (char by char this was the
    // serializer's largest cost). A byte that ends a run is ASCII or, with
    // `ensure_ascii`, a UTF-8 lead byte: always a char boundary.
    let bytes = s.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        let b = bytes[i];
        if b >= 0x20 && b != b'"' && b != b'\\' && (b < 0x7f || !ensure_ascii) {
            i += 1;
            continue;
        }
        out.push_str(&s[start..i]);
        let c = s[i..].chars().next().unwrap_or_default();
        write_escaped(out, c);
        i += c.len_utf8().max(1);
        start = i;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// One char that [`write_str`] escapes: quotes, backslashes and control
/// characters, and with `ensure_ascii` everything outside ' '..='~' (DEL
/// included), as Python's `json.dumps` does.
fn write_escaped(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{08}' => out.push_str("\\b"),
        '\u{0c}' => out.push_str("\\f"),
        c if (c as u32) < 0x20 => push_u_escape(out, c as u32),
        c if (c as u32) > 0x7e => {
            let mut buf = [0u16; 2];
            for unit in c.encode_utf16(&mut buf) {
                push_u_escape(out, u32::from(*unit));
            }
        }
        c => out.push(c),
    }
}

fn push_u_escape(out: &mut String, unit: u32) {
    use std::fmt::Write;
    let _ = write!(out, "\\u{unit:04x}");
}

fn write_number(out: &mut String, n: &Number) -> Result<()> {
    let text = n.to_string();
    if text.contains(['.', 'e', 'E']) {
        let f: f64 = text
            .parse()
            .map_err(|e| Error::Json { detail: format!("unparseable number {text}"), source: Some(Box::new(e)) })?;
        out.push_str(&py_float_repr(f)?);
    } else if text.trim_start_matches('-').bytes().all(|b| b == b'0') {
        // Python's int has no negative zero: json.loads("-0") prints as 0.
        out.push('0');
    } else {
        out.push_str(&text);
    }
    Ok(())
}

/// Python's `repr(float)`: shortest round-trip digits, scientific notation
/// when the decimal exponent is < -4 or >= 16.
pub fn py_float_repr(f: f64) -> Result<String> {
    if !f.is_finite() {
        return Err(Error::NonFinite(f.to_string()));
    }
    // `{:e}` yields the shortest round-trip digits, e.g. "1.5e-7", "-0e0".
    // When two strings of that length round-trip and are equally close to
    // the exact value, Rust takes the upper one and Python (dtoa mode 0)
    // the even one: -2247006352838244.25 is "…244.3" here, "…244.2" there.
    // Rust's fixed-precision formatting rounds the exact value half to
    // even, so redo the shortest length that way and keep it if it still
    // round-trips.
    let shortest = format!("{f:e}");
    let digits = shortest.split_once('e').map_or("", |(m, _)| m);
    let n = digits.bytes().filter(u8::is_ascii_digit).count();
    // Only a shortest length of 16 or more can have two candidates: any two
    // different decimals of at most 15 significant digits are different
    // doubles (DBL_DIG), so at most one of them round-trips to `f`. And a
    // candidate ending in an even digit is already the even one.
    let odd_last = matches!(digits.bytes().last(), Some(b'1' | b'3' | b'5' | b'7' | b'9'));
    let sci = if n >= 16 && odd_last {
        let even = format!("{f:.prec$e}", prec = n.saturating_sub(1));
        if even.parse::<f64>().ok() == Some(f) {
            even
        } else {
            shortest
        }
    } else {
        shortest
    };
    let (mantissa, exp) = sci.split_once('e').expect("LowerExp always has an exponent");
    let exp: i32 = exp.parse().expect("LowerExp exponent is an integer");
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let ndigits = digits.len() as i32;
    let decpt = exp + 1; // value = 0.DIGITS × 10^decpt
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if decpt <= -4 || decpt > 16 {
        out.push_str(&digits[..1]);
        if ndigits > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        out.push('e');
        out.push(if e < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", e.abs()));
    } else if decpt <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-decpt) as usize));
        out.push_str(&digits);
    } else if decpt < ndigits {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    } else {
        out.push_str(&digits);
        out.push_str(&"0".repeat((decpt - ndigits) as usize));
        out.push_str(".0");
    }
    Ok(out)
}

/// Equal as the reference would see them: same canonical bytes (`1.5e-7`
/// and `1.5e-07` are one float; `Value`'s own `==` compares number text).
pub fn equivalent(a: &Value, b: &Value) -> bool {
    matches!((canonical(a), canonical(b)), (Ok(x), Ok(y)) if x == y)
}

/// A JSON float value as Python would hold it (`10.0`, not `10`).
pub fn float(f: f64) -> Value {
    // from_f64 only fails for non-finite input; those become null rather
    // than a panic, and callers only pass finite clock readings and budgets.
    Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null)
}

/// Numeric view of a JSON value, for budgets and counters.
pub fn as_f64(v: &Value) -> Option<f64> {
    v.as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        String::from_utf8(canonical(&parse(text).unwrap()).unwrap()).unwrap()
    }

    /// The run-copying string writer writes what the char-by-char one
    /// (the spec: each char escaped on its own) writes, for strings mixing
    /// plain ASCII, every escaped class and multi-byte chars at run ends.
    #[test]
    fn string_runs_write_what_char_by_char_writes() {
        // Char by char: each char that needs an escape escaped on its own
        // (the escape table itself is pinned by the literal below).
        fn oracle(s: &str, ensure_ascii: bool) -> String {
            let mut out = String::from('"');
            for c in s.chars() {
                let code = c as u32;
                if c == '"' || c == '\\' || code < 0x20 || (ensure_ascii && code > 0x7e) {
                    write_escaped(&mut out, c);
                } else {
                    out.push(c);
                }
            }
            out.push('"');
            out
        }
        let mut pinned = String::new();
        write_str(&mut pinned, "a\"\\\n\r\t\u{8}\u{c}\u{1}\u{7f}é😀", true);
        assert_eq!(pinned, r#""a\"\\\n\r\t\b\f\u0001\u007f\u00e9\ud83d\ude00""#);
        let alphabet = [
            'a', 'Z', ' ', '~', '"', '\\', '\n', '\t', '\r', '\u{8}', '\u{c}', '\u{1}', '\u{1f}', '\u{7f}', 'é', '€',
            '😀', '\u{ffff}',
        ];
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(49);
        for _ in 0..20_000 {
            let len = rng.gen_range(0..12);
            let s: String = (0..len).map(|_| alphabet[rng.gen_range(0..alphabet.len())]).collect();
            for ascii in [true, false] {
                let mut got = String::new();
                write_str(&mut got, &s, ascii);
                assert_eq!(got, oracle(&s, ascii), "{s:?} ensure_ascii={ascii}");
            }
        }
    }

    #[test]
    fn floats_match_python_repr() {
        let cases = [
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e-7, "1.5e-07"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (-0.0, "-0.0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (10.0, "10.0"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (2.5, "2.5"),
        ];
        for (f, want) in cases {
            assert_eq!(py_float_repr(f).unwrap(), want, "{f}");
        }
    }

    #[test]
    fn numbers_take_python_types() {
        assert_eq!(canon(r#"{"x": 1E5}"#), r#"{"x":100000.0}"#);
        assert_eq!(canon("-0"), "0");
        assert_eq!(canon("1180591620717411303424"), "1180591620717411303424");
        assert!(matches!(canonical(&parse("1e400").unwrap()), Err(Error::NonFinite(_))));
    }

    #[test]
    fn strings_escape_like_python() {
        let v = parse(r#"{"b": "é\u2028\u007f\u0001\n😀", "a": 1}"#).unwrap();
        assert_eq!(
            String::from_utf8(canonical(&v).unwrap()).unwrap(),
            "{\"a\":1,\"b\":\"é\u{2028}\u{7f}\\u0001\\n😀\"}"
        );
        assert_eq!(dumps_sorted(&v).unwrap(), r#"{"a": 1, "b": "\u00e9\u2028\u007f\u0001\n\ud83d\ude00"}"#);
        assert_eq!(dumps(&v).unwrap(), r#"{"b": "\u00e9\u2028\u007f\u0001\n\ud83d\ude00", "a": 1}"#);
    }
}
