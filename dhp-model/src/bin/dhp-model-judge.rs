//! `dhp-model-judge [--variant strict|check-then-write] [--leader-ttl S]
//! [--max-attempts N] [--skew S] FILE|-`: judge a store's audit against the
//! model. FILE holds one JSON object a line, changes in commit order: an
//! audited change (`{"seq", "table", "op", "hid", "old", "new", "at",
//! "txn"}`, as dhp-chaos's audit table records it) or a process fact
//! (`{"fact": "died", "holder", "at"}`, …, merged by `judge::merged`). Prints the report as JSON;
//! exit 0 if every change is legal or excused, 1 on a violation, 2 on bad
//! input.

use std::io::{BufRead, BufReader, Read};
use std::process::ExitCode;

use dhp_model::judge::{Change, Fact, Judge, Params, Variant};

fn fail(msg: String) -> ExitCode {
    eprintln!("dhp-model-judge: {msg}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut variant, mut params, mut file) = (Variant::Strict, Params::default(), None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = |what: &str| -> Result<f64, String> {
            let v = it.next().ok_or(format!("{what} needs a value"))?;
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or(format!("{what}: not a number ≥ 0: {v:?}"))
        };
        let r = match a.as_str() {
            "--variant" => match it.next().map(String::as_str) {
                Some("strict") => Ok(Variant::Strict),
                Some("check-then-write") => Ok(Variant::CheckThenWrite),
                v => Err(format!("--variant strict|check-then-write, not {v:?}")),
            }
            .map(|v| variant = v),
            "--leader-ttl" => num("--leader-ttl").map(|x| params.leader_ttl_s = x),
            "--skew" => num("--skew").map(|x| params.skew_s = x),
            "--max-attempts" => num("--max-attempts").map(|x| params.default_max_attempts = x as u32),
            f if file.is_none() && !f.starts_with("--") || f == "-" => {
                file = Some(f.to_string());
                Ok(())
            }
            other => Err(format!("unknown argument {other:?}")),
        };
        if let Err(e) = r {
            return fail(e);
        }
    }
    let Some(file) = file else { return fail("no input FILE (or -)".into()) };
    let input: Box<dyn Read> = if file == "-" {
        Box::new(std::io::stdin())
    } else {
        match std::fs::File::open(&file) {
            Ok(f) => Box::new(f),
            Err(e) => return fail(format!("{file}: {e}")),
        }
    };
    let (mut changes, mut facts) = (Vec::new(), Vec::new());
    for (n, line) in BufReader::new(input).lines().enumerate() {
        let line = match line {
            Ok(l) if l.trim().is_empty() => continue,
            Ok(l) => l,
            Err(e) => return fail(format!("{file}:{}: {e}", n + 1)),
        };
        let v: serde_json::Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => return fail(format!("{file}:{}: not JSON: {e}", n + 1)),
        };
        let r = if v.get("fact").is_some() {
            serde_json::from_value::<Fact>(v).map(|f| facts.push(f))
        } else {
            serde_json::from_value::<Change>(v).map(|c| changes.push(c))
        };
        if let Err(e) = r {
            return fail(format!("{file}:{}: neither a change nor a fact: {e}", n + 1));
        }
    }
    let report = Judge::new(variant, params).run(changes, facts);
    match serde_json::to_string_pretty(&report) {
        Ok(s) => println!("{s}"),
        Err(e) => return fail(format!("rendering the report: {e}")),
    }
    if report.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
