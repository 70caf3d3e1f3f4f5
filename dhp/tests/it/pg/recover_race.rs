//! Ten recoverer processes race for orphaned handoffs in a PostgreSQL
//! store: exactly one wins each CAS; the losers get a typed error and
//! change nothing. Once through `dhp work … recover`, once densely: ten
//! copies of this test binary recover the same 40 handoffs in the same
//! order, so nearly every recover collides with another.
use crate::pg_support;

use crate::common::*;
use dhp_core::{supervisor::Supervisor, Config, Runner};
use std::process::{Command, Stdio};

const CHILD_ENV: &str = "DHP_PG_RACE_CHILD";

#[test]
fn ten_recoverer_processes_one_winner_on_postgres() {
    let url = pg_support::fresh_url("race");
    let dir = tempfile::tempdir().unwrap();
    let (code, v, err) = dhp(&["dispatch", &url, "--census", "1000,3000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap().to_string();
    let r = Runner::open(&url, "w0", Config::default()).unwrap();
    drop(r.claim(&hid).unwrap());
    dhp_testkit::store::expire_lease(&r, &hid).unwrap();
    assert_eq!(Supervisor::open(&url, "s", Config::default()).unwrap().scan().unwrap()[0].kind().as_str(), "orphaned");

    // A barrier file: every process says it is ready, blocks until the
    // barrier exists, then races.
    let barrier = dir.path().join("go");
    let ready = |i: usize| dir.path().join(format!("ready-{i}"));
    let mut children: Vec<_> = (0..10)
        .map(|i| {
            let script = format!(
                "touch {r}; while [ ! -e {b} ]; do sleep 0.001; done; exec {dhp} work '{url}' --runner r{i} recover {hid} --json",
                r = ready(i).display(),
                b = barrier.display(),
                dhp = dhp_bin().display()
            );
            Command::new("sh").arg("-c").arg(script).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
        })
        .collect();
    start_race(&mut children, ready, &barrier, 30.0);
    let outs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let codes: Vec<i32> = outs.iter().map(|o| o.status.code().unwrap()).collect();
    let errs: Vec<String> = outs.iter().map(|o| String::from_utf8_lossy(&o.stderr).into_owned()).collect();
    assert_eq!(codes.iter().filter(|c| **c == 0).count(), 1, "exactly one winner: {codes:?} {errs:?}");
    assert!(codes.iter().all(|c| matches!(c, 0 | 5 | 6)), "losers exit 5 or 6: {codes:?} {errs:?}");
    let st = r.status(&hid).unwrap();
    assert_eq!((st["status"].as_str(), st["attempt"].as_i64()), (Some("completed"), Some(1)), "{st}");
    assert_eq!(st["checkpoints"], 20, "{st}");
}

/// Child role of the dense race: recover every hid in `DHP_PG_RACE_HIDS`
/// as `DHP_PG_RACE_CHILD`, printing `WON hid` for each win.
#[test]
fn race_child() {
    let Ok(id) = std::env::var(CHILD_ENV) else { return };
    let url = std::env::var("DHP_PG_RACE_URL").unwrap();
    let hids = std::env::var("DHP_PG_RACE_HIDS").unwrap();
    let r = Runner::open(&url, &id, Config::default()).unwrap();
    let barrier = std::env::var("DHP_PG_RACE_BARRIER").unwrap();
    // Connected: say so, then wait for the start.
    std::fs::write(format!("{barrier}.ready-{id}"), b"").unwrap();
    while !std::path::Path::new(&barrier).exists() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    for hid in hids.split(',') {
        match r.recover(hid) {
            Ok(_) => println!("WON {hid}"),
            Err(e) => assert!(e.is_ownership() || e.exit_code() == 6, "typed loss: {e:?}"),
        }
    }
}

#[test]
fn ten_processes_recover_forty_handoffs_one_winner_each() {
    let url = pg_support::fresh_url("dense");
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config::default();
    let w0 = Runner::open(&url, "w0", cfg.clone()).unwrap();
    let sup = Supervisor::open(&url, "s", cfg.clone()).unwrap();
    let mut hids = Vec::new();
    for i in 0..40 {
        let env =
            dhp_core::envelope::build("t", serde_json::json!({"i": i}), serde_json::json!({}), Default::default())
                .unwrap();
        let hid = w0.dispatch(&env).unwrap();
        drop(w0.claim(&hid).unwrap());
        dhp_testkit::store::expire_lease(&w0, &hid).unwrap();
        hids.push(hid);
    }
    assert_eq!(sup.scan().unwrap().len(), 40);
    let barrier = dir.path().join("go");
    let exe = std::env::current_exe().unwrap();
    let mut children: Vec<_> = (0..10)
        .map(|i| {
            Command::new(&exe)
                .args(["--exact", "pg::recover_race::race_child", "--nocapture", "--test-threads=1"])
                .env(CHILD_ENV, format!("r{i}"))
                .env("DHP_PG_RACE_URL", &url)
                .env("DHP_PG_RACE_HIDS", hids.join(","))
                .env("DHP_PG_RACE_BARRIER", &barrier)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let ready = |i: usize| dir.path().join(format!("go.ready-r{i}"));
    start_race(&mut children, ready, &barrier, 60.0);
    let mut wins: Vec<String> = Vec::new();
    for c in children {
        let out = c.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "child failed: {text} {}", String::from_utf8_lossy(&out.stderr));
        // libtest may print `test race_child ... ` on the same line first.
        wins.extend(text.lines().filter_map(|l| l.split("WON ").nth(1).map(|h| h.trim().to_string())));
    }
    for hid in &hids {
        let n = wins.iter().filter(|w| *w == hid).count();
        assert_eq!(n, 1, "{} recovered {n} times: {}", &hid[..12], w0.status(hid).unwrap());
    }
    assert_eq!(wins.len(), hids.len(), "no win outside the race");
    for hid in &hids {
        let st = w0.status(hid).unwrap();
        assert_eq!((st["attempt"].as_i64(), st["fence"].as_i64()), (Some(1), Some(2)), "{st}");
    }
}
