//! Every PostgreSQL connection of a `dhp` process names itself
//! `dhp-<subcommand>-<pid>` in `pg_stat_activity`, so an operator (or the
//! chaos harness, which terminates one process's backends) can tell which
//! process a backend serves. A URL's own `application_name=` wins.
use crate::pg_support;

use crate::common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn backends(url: &str, name: &str) -> usize {
    pg_support::sql(url, &format!("SELECT pid::text FROM pg_stat_activity WHERE application_name = '{name}'")).len()
}

#[test]
fn a_worker_names_its_backends_after_its_role_and_pid() {
    let url = pg_support::fresh_url("appname");
    let (code, v, err) = dhp(&["dispatch", &url, "--census", "9000000,9400000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap().to_string();
    let mut w = Command::new(dhp_bin())
        .args(["work", &url, "--runner", "wapp", "claim", &hid, "--pace", "0.05"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let name = format!("dhp-work-{}", w.id());
    let end = Instant::now() + Duration::from_secs(20);
    // the store connection and the liveness keeper's connection
    let mut seen = 0;
    while Instant::now() < end && seen < 2 {
        seen = backends(&url, &name);
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = w.kill();
    let _ = w.wait();
    assert!(seen >= 2, "expected the worker's backends named {name}, saw {seen}");
}

#[test]
fn a_url_application_name_wins() {
    let url = format!("{}&application_name=ops-console", pg_support::fresh_url("appname_url"));
    let r = dhp_core::Runner::open(&url, "observer", dhp_core::Config::default()).unwrap();
    assert!(backends(&url, "ops-console") >= 1, "the URL's application_name was replaced");
    drop(r);
}
