//! The one-round-trip functions are part of the store's layout: a v3 store
//! created before them (no functions) gets them when it is next opened
//! (upgrade in place, idempotent), and a role that may not create them
//! still works through the client-side transactions, with the same results.
//! `dhp_checkpoint_v2` is used when present; a store that has only the
//! `_v1` functions (made by an older dhp-rs, opened by a role that may not
//! add `_v2`) goes on with `_v1`, as does a process whose `_v2` is dropped
//! under it.

use crate::pg_support;

use crate::pg_support::{base_url, sql};
use dhp_core::{Config, Runner};
use serde_json::json;

fn functions(schema: &str) -> Vec<Option<String>> {
    sql(
        &base_url(),
        &format!(
            "SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE n.nspname = '{schema}' ORDER BY 1"
        ),
    )
}

fn drop_v2(schema: &str) {
    sql(
        &base_url(),
        &format!(
            "DROP FUNCTION IF EXISTS {schema}.dhp_checkpoint_v2; DROP TYPE IF EXISTS {schema}.dhp_checkpoint_r_v2"
        ),
    );
}

fn drop_functions(schema: &str) {
    drop_v2(schema);
    sql(
        &base_url(),
        &format!(
            "DROP FUNCTION {schema}.dhp_checkpoint_v1; DROP FUNCTION {schema}.dhp_checkpoint_steps_v1; \
             DROP FUNCTION {schema}.dhp_heartbeat_v1; SELECT 1"
        ),
    );
}

/// Wait until the server's function-call counts of `schema` read `want`
/// (statistics reach the view when a session ends).
fn wait_calls(schema: &str, want: &str) {
    let calls_sql = format!(
        "SELECT string_agg(funcname || '=' || calls, ',' ORDER BY funcname) FROM pg_stat_user_functions \
         WHERE schemaname = '{schema}'"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let calls = sql(&base_url(), &calls_sql).into_iter().next().flatten().unwrap_or_default();
        if calls == want {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "function calls {calls:?}, not {want:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn work(url: &str, id: &str) {
    let r = Runner::open(url, id, Config::default()).unwrap();
    let env = dhp_core::envelope::build("t", json!({"id": id}), json!({}), Default::default()).unwrap();
    let hid = r.dispatch(&env).unwrap();
    let ctx = r.claim(&hid).unwrap();
    for i in 0..3 {
        assert_eq!(ctx.checkpoint(&json!({"i": i})).unwrap(), i);
    }
    assert!(ctx.heartbeat().unwrap() > 0.0);
    assert_eq!(ctx.checkpoint_step(&json!({"i": 3}), 2).unwrap().seq(), 3);
    let st = r.status(&hid).unwrap();
    assert_eq!((st["checkpoints"].as_i64(), st["steps"].as_i64()), (Some(4), Some(2)), "{st}");
}

#[test]
fn old_stores_are_upgraded_and_unprivileged_roles_fall_back() {
    let url = pg_support::fresh_url("onetrip_up");
    let schema = url.rsplit_once("schema=").unwrap().1.to_string();
    // Count function calls of this session (a superuser setting).
    work(&format!("{url}&options=-c%20track_functions%3Dpl"), "w1");
    let names = |v: &[&str]| v.iter().map(|f| Some(f.to_string())).collect::<Vec<_>>();
    let v1 = ["dhp_checkpoint_steps_v1", "dhp_checkpoint_v1", "dhp_heartbeat_v1"];
    let want = names(&["dhp_checkpoint_steps_v1", "dhp_checkpoint_v1", "dhp_checkpoint_v2", "dhp_heartbeat_v1"]);
    assert_eq!(functions(&schema), want);
    // The calls were made: 3 + 1 checkpoints, 1 heartbeat; _v2 for those
    // without steps.
    wait_calls(&schema, "dhp_checkpoint_steps_v1=1,dhp_checkpoint_v2=3,dhp_heartbeat_v1=1");

    // _v2 dropped under an open runner: its next checkpoint takes _v1.
    let tracked = format!("{url}&options=-c%20track_functions%3Dpl");
    let r = Runner::open(&tracked, "w1b", Config::default()).unwrap();
    let env = dhp_core::envelope::build("t", json!({"id": "w1b"}), json!({}), Default::default()).unwrap();
    let ctx = r.claim(&r.dispatch(&env).unwrap()).unwrap();
    assert_eq!(ctx.checkpoint(&json!({"i": 0})).unwrap(), 0);
    drop_v2(&schema);
    assert_eq!(ctx.checkpoint(&json!({"i": 1})).unwrap(), 1);
    assert_eq!(ctx.checkpoint(&json!({"i": 2})).unwrap(), 2);
    drop((ctx, r));
    wait_calls(&schema, "dhp_checkpoint_steps_v1=1,dhp_checkpoint_v1=2,dhp_heartbeat_v1=1");

    // A store as the previous version left it: tables only.
    drop_functions(&schema);
    assert!(functions(&schema).is_empty());
    work(&url, "w2");
    assert_eq!(functions(&schema), want, "re-created at open");
    work(&url, "w3"); // idempotent: present, nothing to do

    // A role with table rights only cannot create them. A store with only
    // the _v1 functions (an older dhp-rs made it): _v1 is used.
    let role = format!("{schema}_dml");
    sql(
        &base_url(),
        &format!(
            "CREATE ROLE {role} LOGIN PASSWORD 'dml-pw'; GRANT USAGE ON SCHEMA {schema} TO {role}; \
             GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}; \
             ALTER ROLE {role} SET track_functions = 'pl'; SELECT 1"
        ),
    );
    let (scheme, rest) = url.split_once("://").unwrap();
    let host = rest.split_once('@').unwrap().1;
    let dml = format!("{scheme}://{role}:dml-pw@{host}");
    drop_v2(&schema);
    work(&dml, "w4");
    assert_eq!(functions(&schema), names(&v1), "_v2 not created without the privilege");
    wait_calls(&schema, "dhp_checkpoint_steps_v1=1,dhp_checkpoint_v1=3,dhp_heartbeat_v1=1");

    // None at all: it still works, through the transactions.
    drop_functions(&schema);
    work(&dml, "w5");
    assert!(functions(&schema).is_empty(), "not created without the privilege");
}
