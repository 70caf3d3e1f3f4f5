//! A SIGSTOPped worker that a supervisor's stalled-writer watchdog later
//! SIGKILLs (no SIGCONT, no harness kill): the timeline ends its stopped
//! band at the death and marks the kill, instead of drawing it stopped to
//! the end of the round.

use serde_json::json;

#[test]
fn the_stopped_band_ends_at_the_watchdog_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let hid = "a".repeat(64);
    let t0 = 1_000_000.0;
    let meta = json!({"config": {"seed": 1, "round": 0}, "hids": [hid], "t0": t0, "t_end": t0 + 10.0});
    std::fs::write(dir.join("round.json"), meta.to_string()).unwrap();
    let lines = [
        json!({"t": t0 + 0.1, "pid": 1, "process": "chaos", "op": "spawn", "type": "event", "name": "w1", "role": "worker", "impl": "builtin", "hid": hid}),
        json!({"t": t0 + 0.2, "pid": 7, "process": "w1", "op": "claim", "type": "ok", "hid": hid, "holder": "w1", "fence": 0}),
        json!({"t": t0 + 1.0, "pid": 1, "process": "chaos", "op": "fault", "type": "event", "kind": "pause", "signal": "STOP", "victim": "w1", "hid": hid, "lease_fence": 0}),
        json!({"t": t0 + 2.0, "pid": 1, "process": "chaos", "op": "exit", "type": "event", "name": "w1", "role": "worker", "hid": hid, "code": null, "signal": 9, "failpoint_fired": false, "stopped": true}),
    ];
    let mut f = crate::common::SplitHistory::open(dir);
    for l in lines {
        f.write(&l);
    }
    dhp_chaos::timeline::write(dir).unwrap();
    let svg = std::fs::read_to_string(dir.join("timeline.svg")).unwrap();
    // the band runs from 1 s to 2 s of the 10 s round, not to its end
    let band = svg.lines().find(|l| l.contains("w1 SIGSTOP")).expect("a stopped band");
    assert!(band.contains("killed while stopped 2.000s"), "{band}");
    let width: f64 = band.split("width=\"").nth(1).and_then(|w| w.split('"').next()).unwrap().parse().unwrap();
    assert!((width - 140.0).abs() < 1.0, "band width {width} (1 s of 10 s over 1400 px): {band}");
    let mark = svg.lines().find(|l| l.contains("killed-while-stopped")).expect("a kill mark");
    assert!(mark.contains("stalled-writer watchdog"), "{mark}");
}

#[test]
fn a_harness_kill_of_a_stopped_worker_is_not_blamed_on_the_watchdog() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let hid = "b".repeat(64);
    let t0 = 1_000_000.0;
    let meta = json!({"config": {"seed": 1, "round": 0}, "hids": [hid], "t0": t0, "t_end": t0 + 10.0});
    std::fs::write(dir.join("round.json"), meta.to_string()).unwrap();
    let lines = [
        json!({"t": t0 + 1.0, "pid": 1, "process": "chaos", "op": "fault", "type": "event", "kind": "pause", "signal": "STOP", "victim": "w1", "hid": hid, "lease_fence": 0}),
        json!({"t": t0 + 3.0, "pid": 1, "process": "chaos", "op": "fault", "type": "event", "kind": "kill-worker", "signal": "KILL", "victim": "w1", "hid": hid}),
        json!({"t": t0 + 3.001, "pid": 1, "process": "chaos", "op": "exit", "type": "event", "name": "w1", "role": "worker", "hid": hid, "signal": 9, "stopped": true}),
    ];
    let mut f = crate::common::SplitHistory::open(dir);
    for l in lines {
        f.write(&l);
    }
    dhp_chaos::timeline::write(dir).unwrap();
    let svg = std::fs::read_to_string(dir.join("timeline.svg")).unwrap();
    let band = svg.lines().find(|l| l.contains("w1 SIGSTOP")).expect("a stopped band");
    assert!(band.contains("killed while stopped 3.001s"), "{band}");
    assert!(!svg.contains("killed-while-stopped"), "the harness's own kill has its own mark");
}
