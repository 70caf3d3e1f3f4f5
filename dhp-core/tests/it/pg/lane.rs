//! The lane (store/postgres/lane.rs), seen from the server: a worker's
//! hot calls (a plain checkpoint, a checkpoint with steps, a heartbeat) go
//! over one session of their own, so after each of them and a status read
//! that session last ran the call while the main connection last ran the
//! read. The
//! lane's rows are judged as the main connection's (one_trip_refusals and
//! one_trip_upgrade run through it). A lane whose session the server ended
//! fails that one call as a lost server, and the next call opens another.

use crate::pg_support::{self, base_url, sql};
use dhp_core::{Config, Runner};
use serde_json::json;

/// The last statement of each session named `app`, oldest session first.
fn last_statements(app: &str) -> Vec<(String, String)> {
    sql(
        &base_url(),
        &format!(
            "SELECT pid::text || ' ' || query FROM pg_stat_activity WHERE application_name = '{app}' \
             ORDER BY backend_start"
        ),
    )
    .into_iter()
    .flatten()
    .map(|s| {
        let (pid, q) = s.split_once(' ').unwrap_or((&s, ""));
        (pid.to_string(), q.to_string())
    })
    .collect()
}

fn claimed(tag: &str) -> (Runner, String, String) {
    let app = format!("lane-{tag}-{}", std::process::id());
    let url = format!("{}&application_name={app}", pg_support::fresh_url(tag));
    let r = Runner::open(&url, "w1", Config::default()).unwrap();
    let env = dhp_core::envelope::build("t", json!({"tag": tag}), json!({}), Default::default()).unwrap();
    let hid = r.dispatch(&env).unwrap();
    (r, hid, app)
}

/// The one session that last ran a statement containing `call`.
fn ran(app: &str, call: &str) -> String {
    let sessions = last_statements(app);
    let found: Vec<_> = sessions.iter().filter(|(_, q)| q.contains(call)).collect();
    assert_eq!(found.len(), 1, "one session last ran {call}: {sessions:?}");
    assert!(sessions.len() >= 2, "the status read ran on another session: {sessions:?}");
    found[0].0.clone()
}

#[test]
fn a_workers_hot_calls_go_over_one_session_of_their_own() {
    let (r, hid, app) = claimed("lane_used");
    let ctx = r.claim(&hid).unwrap();
    for i in 0..3 {
        assert_eq!(ctx.checkpoint(&json!({"i": i})).unwrap(), i);
    }
    assert_eq!(r.status(&hid).unwrap()["checkpoints"], 3);
    let lane = ran(&app, "dhp_checkpoint_v2");
    assert_eq!(ctx.checkpoint_step(&json!({"i": 3}), 2).unwrap().seq(), 3);
    assert_eq!(r.status(&hid).unwrap()["steps"], 2);
    assert_eq!(ran(&app, "dhp_checkpoint_steps_v1"), lane);
    assert!(ctx.heartbeat().unwrap() > 0.0);
    assert_eq!(r.status(&hid).unwrap()["checkpoints"], 4);
    assert_eq!(ran(&app, "dhp_heartbeat_v1"), lane);
}

#[test]
fn a_lane_the_server_ended_fails_one_call_as_a_lost_server_and_is_opened_again() {
    let (r, hid, app) = claimed("lane_lost");
    let ctx = r.claim(&hid).unwrap();
    assert_eq!(ctx.checkpoint(&json!({"i": 0})).unwrap(), 0);
    let sessions = last_statements(&app);
    let (pid, _) = sessions.iter().find(|(_, q)| q.contains("dhp_checkpoint_v2")).expect("a lane session");
    sql(&base_url(), &format!("SELECT pg_terminate_backend({pid}, 10000)"));
    let err = ctx.checkpoint(&json!({"i": 1})).expect_err("the lane's session was ended");
    assert!(err.is_server_lost(), "a lost server, to ride or report: {err}");
    assert_eq!(ctx.checkpoint(&json!({"i": 1})).unwrap(), 1, "a new lane; the lost call wrote nothing");
    let rows = r.checkpoints(&hid).unwrap();
    assert_eq!(rows.iter().map(|c| c.seq).collect::<Vec<_>>(), vec![0, 1]);
    let after = last_statements(&app);
    assert!(after.iter().any(|(p, q)| p != pid && q.contains("dhp_checkpoint_v2")), "{after:?}");
}
