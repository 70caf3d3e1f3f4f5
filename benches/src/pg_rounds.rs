//! Rounds of the PostgreSQL throughput rows (issue 49): on a 2-core VM one
//! 5-second run of 32 workers scatters by ±0.15 against the next, so a
//! verdict on one run is a coin toss. `dhp-bench pg` runs DHP's workers
//! and every pgbench workload `rounds` times, interleaved (DHP, then each
//! pgbench workload, then DHP again), and judges the element-wise median;
//! each round's verdict-bearing figures are printed beside it.

use serde_json::{json, Value};

/// The element-wise median of `runs`, all of one shape: an object's keys
/// are those of the first run; a number is the median of the runs that
/// have a number there (the mean of the middle two for an even count);
/// anything else is the first run's.
pub fn median(runs: &[Value]) -> Value {
    let Some(first) = runs.first() else {
        return Value::Null;
    };
    match first {
        Value::Object(m) => Value::Object(
            m.keys()
                .map(|k| {
                    let parts: Vec<Value> = runs.iter().map(|r| r[k.as_str()].clone()).collect();
                    (k.clone(), median(&parts))
                })
                .collect(),
        ),
        Value::Number(_) => {
            let mut xs: Vec<f64> = runs.iter().filter_map(Value::as_f64).collect();
            xs.sort_by(f64::total_cmp);
            let n = xs.len();
            let m = match n {
                0 => return Value::Null,
                _ if n % 2 == 1 => xs[n / 2],
                _ => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
            };
            // counts stay counts when the median is one of them
            let counts = runs.iter().all(|r| r.is_u64() || r.is_null());
            if counts && m.fract() == 0.0 && m >= 0.0 && m <= u64::MAX as f64 {
                json!(m as u64)
            } else {
                json!(m)
            }
        }
        other => other.clone(),
    }
}

fn ratio(a: &Value, b: &Value) -> Option<f64> {
    crate::pg_call::ratio(a.as_f64(), b.as_f64())
}

fn list(xs: impl Iterator<Item = Option<f64>>, digits: usize) -> String {
    xs.map(|x| crate::pg_call::show(x, digits, "")).collect::<Vec<_>>().join(" · ")
}

/// The table of each round's verdict-bearing figures, for the entries of
/// `v["aggregate"]` that carry more than one round; empty when none does.
pub fn markdown(v: &Value) -> String {
    let rows: Vec<&Value> = v["aggregate"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["each_round"].as_array().is_some_and(|r| r.len() > 1))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nEach round, in the order run (the tables above show the element-wise medians of the rounds, and \
         judge them):\n\n\
         | clients = workers | DHP checkpoints/s | DHP / one-round-trip | DHP / pgbench calling `_v2` | \
         DHP / a process each | DHP worker µs/checkpoint | DHP server / one-round-trip server |\n\
         |---:|---|---|---|---|---|---|\n",
    );
    for a in rows {
        let rounds = a["each_round"].as_array().map(Vec::as_slice).unwrap_or_default();
        let each = |f: &dyn Fn(&Value) -> Option<f64>, d: usize| list(rounds.iter().map(f), d);
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            a["processes"],
            each(&|r| r["postgres"].as_f64(), 0),
            each(&|r| ratio(&r["postgres"], &r["pgbench"]["one_trip"]["tps"]), 2),
            each(&|r| ratio(&r["postgres"], &r["pgbench"]["call_v2"]["tps"]), 2),
            each(&|r| ratio(&r["postgres"], &r["pgbench"]["call_v2_procs"]["tps"]), 2),
            each(&|r| r["postgres_cpu"]["client_us"].as_f64(), 0),
            each(&|r| ratio(&r["postgres_cpu"]["server_us"], &r["pgbench"]["one_trip"]["server_us"]), 2),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_taken_leaf_by_leaf() {
        let runs = [
            json!({"postgres": 10.0, "cpu": {"server_us": 300.0, "steal": null}, "tag": "a"}),
            json!({"postgres": 30.0, "cpu": {"server_us": 100.0, "steal": null}, "tag": "b"}),
            json!({"postgres": 20.0, "cpu": {"server_us": 200.0, "steal": null}, "tag": "c"}),
        ];
        let m = median(&runs);
        assert_eq!(m["postgres"], json!(20.0));
        assert_eq!(m["cpu"]["server_us"], json!(200.0));
        assert_eq!(m["cpu"]["steal"], Value::Null);
        assert_eq!(m["tag"], json!("a"));
        assert_eq!(median(&runs[..2])["postgres"], json!(20.0));
        // a round without a figure does not drag the median
        let gap = [json!({"x": 1.0}), json!({"x": null}), json!({"x": 5.0})];
        assert_eq!(median(&gap)["x"], json!(3.0));
        assert_eq!(median(&[]), Value::Null);
        let counts = [json!(7), json!(3), json!(5)];
        assert_eq!(median(&counts).as_u64(), Some(5));
        assert_eq!(median(&counts[..2]), json!(5));
        assert_eq!(median(&[json!(2), json!(3)]), json!(2.5));
    }

    #[test]
    fn each_round_is_shown() {
        let round = |dhp: f64, call: f64| {
            json!({"postgres": dhp, "postgres_cpu": {"client_us": 30.0, "server_us": 150.0},
                   "pgbench": {"one_trip": {"tps": 10000.0, "server_us": 100.0}, "call_v2": {"tps": call}}})
        };
        let v = json!({"aggregate": [
            {"processes": 1, "each_round": [round(3000.0, 3000.0)]},
            {"processes": 32, "each_round": [round(7000.0, 10000.0), round(9000.0, 10000.0), round(9500.0, 0.0)]}]});
        let md = markdown(&v);
        assert!(
            md.contains(
                "| 32 | 7000 · 9000 · 9500 | 0.70 · 0.90 · 0.95 | 0.70 · 0.90 · — | — · — · — | 30 · 30 · 30 | 1.50 · 1.50 · 1.50 |"
            ),
            "{md}"
        );
        assert!(!md.contains("| 1 |"), "one round has no rounds table: {md}");
        assert!(markdown(&json!({"aggregate": [{"processes": 1}]})).is_empty());
    }
}
