//! Timestamps an implementation writes as text — the envelope's
//! `provenance.created_at`, `execution.completed_at` and every checkpoint's
//! `at` — are ISO-8601 UTC exactly as Python's
//! `datetime.now(timezone.utc).isoformat()` writes them
//! (docs/PROTOCOL.md §3: `2026-11-29T08:39:10.123456+00:00`, the fraction
//! omitted when the microseconds are zero), and tell the time they were
//! written.

use super::new_handoff;
use crate::check::{Check, Fail};
use crate::error::Error;
use crate::{ensure, ensure_eq};
use serde_json::{json, Value};

/// Seconds of slack around the assertion's own clock readings (the
/// implementation runs on the same host).
const SLACK: f64 = 5.0;

/// Unix seconds of an isoformat() UTC text, or why it is not one.
pub fn parse_isoformat_utc(s: &str) -> Result<f64, Error> {
    let bad = |problem: String| Error::Timestamp { text: s.to_string(), problem };
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Result<i64, Error> {
        let part = s.get(r.clone()).filter(|p| p.bytes().all(|c| c.is_ascii_digit()) && p.len() == r.len());
        part.and_then(|p| p.parse().ok()).ok_or_else(|| bad(format!("not digits at {r:?}")))
    };
    let sep = |i: usize, c: u8| {
        if b.get(i) == Some(&c) {
            Ok(())
        } else {
            Err(bad(format!("want {:?} at {i}", c as char)))
        }
    };
    let (y, mo, d) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    sep(4, b'-')?;
    sep(7, b'-')?;
    sep(10, b'T')?;
    let (h, mi, se) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    sep(13, b':')?;
    sep(16, b':')?;
    let (micros, rest) = if b.get(19) == Some(&b'.') {
        let m = digits(20..26)?;
        if m == 0 {
            return Err(bad("isoformat() omits a zero fraction".into()));
        }
        (m, 26)
    } else {
        (0, 19)
    };
    if s.get(rest..) != Some("+00:00") {
        return Err(bad("want the UTC offset +00:00 after the seconds".into()));
    }
    let days_in = [
        31,
        if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo) || d < 1 || d > days_in[(mo - 1) as usize] || h > 23 || mi > 59 || se > 59 {
        return Err(bad("no such date or time".into()));
    }
    // days from the civil date (H. Hinnant's days_from_civil)
    let yy = if mo <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok((days * 86_400 + h * 3_600 + mi * 60 + se) as f64 + micros as f64 / 1e6)
}

/// `v` is an isoformat() UTC text of a time in `[from, to]` (± [`SLACK`]).
fn written_between(v: &Value, what: &str, from: f64, to: f64) -> Check {
    let s = v.as_str().ok_or_else(|| Fail::failed(format!("{what} is {v}, not an ISO-8601 string")))?;
    let t = parse_isoformat_utc(s).map_err(|e| Fail::failed(format!("{what}: {e}")))?;
    ensure!(
        t >= from - SLACK && t <= to + SLACK,
        "{what} {s:?} is not the time it was written (between {from:.0} and {to:.0}, Unix seconds)"
    );
    Ok(())
}

/// timestamps-iso8601
pub fn timestamps_iso8601(cx: &crate::suite::Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let t0 = cx.now();
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    ensure_eq!(m.checkpoint(&t, json!({"k": 1}))?, 0, "seq of the first checkpoint");
    m.complete(&t, json!({"x": 1}))?;
    let t1 = cx.now();
    let env = m.load_envelope(&root, &hid)?;
    written_between(&env["provenance"]["created_at"], "provenance.created_at", t0, t1)?;
    written_between(&env["execution"]["completed_at"], "execution.completed_at", t0, t1)?;
    let cps = env["execution"]["checkpoints"].as_array().cloned().unwrap_or_default();
    ensure_eq!(cps.len(), 1, "execution.checkpoints of the loaded envelope");
    written_between(&cps[0]["at"], "execution.checkpoints[0].at", t0, t1)?;
    let mut times =
        vec![env["provenance"]["created_at"].clone(), env["execution"]["completed_at"].clone(), cps[0]["at"].clone()];
    if let Some(db) = cx.store(&root)? {
        for row in db.checkpoints(&hid)? {
            written_between(&json!(row.at), &format!("checkpoints row {} at", row.seq), t0, t1)?;
            times.push(json!(row.at));
        }
    }
    // microseconds, as Python's isoformat writes them: a time drops its
    // fraction only when it is zero, which for all of these at once has a
    // chance of one in 10^18
    ensure!(
        times.iter().any(|t| t.as_str().is_some_and(|s| s.contains('.'))),
        "no timestamp carries its microseconds: {times:?}"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_isoformat_utc as p;

    #[test]
    fn isoformat_utc() {
        assert_eq!(p("1970-01-01T00:00:00+00:00").unwrap(), 0.0);
        assert_eq!(p("2001-09-09T01:46:40.250000+00:00").unwrap(), 1_000_000_000.25);
        assert_eq!(p("2024-02-29T12:00:00+00:00").unwrap(), 1_709_208_000.0);
        for bad in [
            "xyzzy",
            "",
            "1764500000.5",
            "2026-11-29T08:39:10.000000+00:00",
            "2026-11-29T08:39:10Z",
            "2026-11-29 08:39:10+00:00",
            "2026-11-29T08:39:10.123+00:00",
            "2026-11-29T08:39:10.123456+01:00",
            "2026-02-30T08:39:10+00:00",
            "2026-11-29T24:00:00+00:00",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }
}
