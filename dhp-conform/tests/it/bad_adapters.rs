//! Adapters that crash, hang, print garbage, answer the wrong id or send a
//! reply their schema rejects: the assertions that hit it are *errored*
//! (not failed) within the timeout, and the run goes on. (An adapter that
//! cannot start at all: `adapter_cannot_start.rs`.)
use crate::common::*;

/// The assertions that call `suspend`.
const USES_SUSPEND: &[&str] =
    &["no-runner-lock-in", "oversize-rejected", "suspend-resume-round-trip", "tampered-bundle-rejected"];

fn misbehaving(mode: &str, cause: &str) {
    let run = conform(&[
        "--impl",
        &adapter(&format!("--misbehave {mode}:suspend")),
        "--format",
        "json",
        "--timeout",
        "2",
        "--level",
        "extended",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let mut errored = run.with_outcome("errored");
    errored.sort();
    assert_eq!(errored, USES_SUSPEND, "{mode}: errored assertions");
    let failed: Vec<_> = run.outcomes().into_iter().filter(|(_, (o, _))| o == "failed").collect();
    assert!(failed.is_empty(), "{mode}: nothing fails: {failed:#?}");
    assert_eq!(
        run.with_outcome("passed").len(),
        assertion_names().len() - USES_SUSPEND.len(),
        "{mode}: the run goes on"
    );
    for ((_, name), (_, msg)) in run.outcomes() {
        if USES_SUSPEND.contains(&name.as_str()) {
            assert!(msg.contains(cause), "{mode}: {name}: message {msg:?} should say {cause:?}");
        }
    }
    assert!(run.wall.as_secs_f64() < 30.0, "{mode}: took {:?}", run.wall);
}

#[test]
fn crash_is_errored() {
    misbehaving("crash", "adapter exited");
}

#[test]
fn hang_is_errored_after_the_timeout() {
    misbehaving("hang", "did not answer suspend within 2.0s");
}

#[test]
fn garbage_is_errored() {
    misbehaving("garbage", "not a JSON reply");
}

#[test]
fn wrong_id_is_errored() {
    misbehaving("wrong-id", "with id");
}

#[test]
fn reply_violating_its_schema_is_errored() {
    misbehaving("bad-reply", "violates reply.schema.json");
}
