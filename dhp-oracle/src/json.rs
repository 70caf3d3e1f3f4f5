//! The renderings of §2, as Python's `json.dumps` writes them.
//!
//! - canonical: `json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`
//! - sorted: `json.dumps(x, sort_keys=True)`
//!
//! Numbers are rendered from their text (serde_json keeps it with the
//! workspace's `arbitrary_precision` feature): a number written with `.`,
//! `e` or `E` is a float and printed as Python's `repr` would; any other is
//! an integer, printed in full.

use crate::OracleError;
use serde_json::Value;

/// canonical (§2.2): sorted keys, `,` and `:`, non-ASCII written raw.
pub fn canonical(v: &Value) -> Result<String, OracleError> {
    let mut out = String::new();
    write(&mut out, v, &Style { item: ",", key: ":", ascii: false, sort: true })?;
    Ok(out)
}

/// sorted (§2.3): sorted keys, `, ` and `: `, everything outside printable
/// ASCII escaped as `\uXXXX`.
pub fn sorted(v: &Value) -> Result<String, OracleError> {
    let mut out = String::new();
    write(&mut out, v, &Style { item: ", ", key: ": ", ascii: true, sort: true })?;
    Ok(out)
}

/// plain (§2.3): `json.dumps(x)` — sorted's separators and escapes, object
/// members in the order they were read (the workspace's serde_json keeps
/// it, `preserve_order`). The stored envelope, `handoffs.envelope_json`.
pub fn plain(v: &Value) -> Result<String, OracleError> {
    let mut out = String::new();
    write(&mut out, v, &Style { item: ", ", key: ": ", ascii: true, sort: false })?;
    Ok(out)
}

struct Style {
    item: &'static str,
    key: &'static str,
    ascii: bool,
    sort: bool,
}

fn write(out: &mut String, v: &Value, st: &Style) -> Result<(), OracleError> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(&n.to_string())?),
        Value::String(s) => string(out, s, st.ascii),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(st.item);
                }
                write(out, x, st)?;
            }
            out.push(']');
        }
        Value::Object(m) => {
            // Rust compares strings by UTF-8 bytes, which orders them by
            // code point, as Python's sort_keys does.
            let mut keys: Vec<&String> = m.keys().collect();
            if st.sort {
                keys.sort();
            }
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(st.item);
                }
                string(out, k, st.ascii);
                out.push_str(st.key);
                write(out, &m[k], st)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// A JSON string, escaped as Python's encoder does (§2.1, §2.3).
fn string(out: &mut String, s: &str, ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if ascii && !(' '..='~').contains(&c) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A number's text as Python prints the value it parses to.
pub fn number(text: &str) -> Result<String, OracleError> {
    let is_float = text.contains(['.', 'e', 'E']);
    if !is_float {
        let digits = text.strip_prefix('-').unwrap_or(text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(OracleError::BadNumber(text.to_string()));
        }
        // Python's int: "-0" is 0; JSON has no leading zeros otherwise.
        let trimmed = digits.trim_start_matches('0');
        return Ok(match (trimmed.is_empty(), text.starts_with('-')) {
            (true, _) => "0".to_string(),
            (false, true) => format!("-{trimmed}"),
            (false, false) => trimmed.to_string(),
        });
    }
    let x: f64 = text.parse().map_err(|_| OracleError::BadNumber(text.to_string()))?;
    if !x.is_finite() {
        return Err(OracleError::NonFinite(text.to_string()));
    }
    Ok(float_repr(x))
}

/// Python's `repr(float)`: the shortest digits that round-trip, in fixed
/// notation when the decimal point falls within (-4, 16], else as
/// `d.ddde±XX` (at least two exponent digits); fixed notation always has a
/// fractional part (`10.0`).
pub fn float_repr(x: f64) -> String {
    // `{:e}` is the shortest round-trip form: "1.5e-7", "-1e16", "0e0".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if x.is_sign_negative() { "-" } else { "" };
    let decpt = exp + 1; // value = 0.DIGITS × 10^decpt
    let n = digits.len() as i32;
    let body = if -4 < decpt && decpt <= 16 {
        if decpt <= 0 {
            format!("0.{}{digits}", "0".repeat((-decpt) as usize))
        } else if decpt >= n {
            format!("{digits}{}.0", "0".repeat((decpt - n) as usize))
        } else {
            let (a, b) = digits.split_at(decpt as usize);
            format!("{a}.{b}")
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let e = decpt - 1;
        format!("{first}{frac}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_python_repr() {
        for (x, want) in [
            (10.0, "10.0"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e-7, "1.5e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (0.1, "0.1"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e22, "1e+22"),
            (-2.5, "-2.5"),
            (1e-310, "1e-310"),
        ] {
            assert_eq!(float_repr(x), want, "{x:e}");
        }
    }

    #[test]
    fn number_texts() {
        assert_eq!(number("1E5").unwrap(), "100000.0");
        assert_eq!(number("1180591620717411303424").unwrap(), "1180591620717411303424");
        assert_eq!(number("-0").unwrap(), "0");
        assert!(matches!(number("1e400"), Err(OracleError::NonFinite(_))));
    }
}
