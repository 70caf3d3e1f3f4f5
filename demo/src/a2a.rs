//! `cargo run -p demo -- --a2a`: the A2A bridge demo. A client (the
//! official a2a-sdk, over HTTP) submits a prime census to `dhp a2a`; agent B
//! claims it and is SIGKILLed mid-task; the supervisor inside the bridge
//! orphans it and agent C recovers from the last checkpoint. The client's
//! observed states are printed: only SUBMITTED/WORKING → COMPLETED, never
//! FAILED or stuck; the result is checked and rework is ≤ 1 chunk.

use demo::procs::{self, Proc};
use dhp_workload::census;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LO: u64 = 0;
const HI: u64 = 600_000;
const CHUNK: u64 = 20_000;
/// Agent B is killed after this many checkpoints.
const KILL_AFTER: u64 = 8;
/// Short leases so the demo takes seconds (the supervisor also sees the
/// dead worker's liveness token vanish at once).
const ENV: &[(&str, &str)] = &[
    ("DHP_LEASE_INTERVAL_S", "0.5"),
    ("DHP_LEASE_MAX_MISSED", "2"),
    ("DHP_SUPERVISOR_SCAN_S", "0.2"),
    ("DHP_LEADER_TTL_S", "2.0"),
];
const PHASE: Duration = Duration::from_secs(120);

fn python() -> anyhow::Result<PathBuf> {
    dhp_testkit::locate::python(None)
        .map_err(|e| anyhow::anyhow!("{e} (the A2A demo also needs a2a-sdk, which scripts/setup.sh installs)"))
}

/// The A2A client script of the checkout (found at run time).
fn client_script() -> anyhow::Result<PathBuf> {
    Ok(dhp_testkit::locate::checkout()?.join("dhp/tests/py/a2a_client.py"))
}

fn status(dhp: &Path, root: &Path, hid: &str) -> Value {
    Command::new(dhp)
        .arg("status")
        .arg(root)
        .arg(hid)
        .arg("--json")
        .output()
        .ok()
        .and_then(|o| serde_json::from_slice(&o.stdout).ok())
        .unwrap_or(Value::Null)
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) -> anyhow::Result<Duration> {
    let t0 = Instant::now();
    while !f() {
        anyhow::ensure!(t0.elapsed() < PHASE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(t0.elapsed())
}

/// A fresh bearer token for the demo's bridge (16 random bytes, hex).
fn demo_token() -> anyhow::Result<String> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// The bridge: HTTP server + supervisor, no worker pool (agents B and C
/// are separate processes so that one can be killed). `dhp a2a` requires a
/// token; the demo's clients present it. Returns it with the URL it serves.
fn start_bridge(dhp: &Path, root_s: &str, token: &str) -> anyhow::Result<(Proc, String)> {
    let mut cmd = Command::new(dhp);
    cmd.args(["a2a", "--create", "--root", root_s, "--port", "0", "--id", "demo-bridge"])
        .env("DHP_A2A_TOKEN", token)
        .envs(ENV.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut bridge = Proc::spawn("dhp a2a", cmd)?;
    let mut first = String::new();
    if let Some(out) = bridge.child.stdout.as_mut() {
        BufReader::new(out).read_line(&mut first)?;
    }
    let url = first.split_whitespace().find(|w| w.starts_with("http://")).map(str::to_string);
    let url = url.ok_or_else(|| anyhow::anyhow!("dhp a2a did not start: {first:?}"))?;
    Ok((bridge, url))
}

/// The client submits over HTTP (A2A SendMessage, returnImmediately):
/// the task's id and its DHP handoff's.
fn submit(py: &Path, url: &str, token: &str, say: &mut dyn FnMut(&str)) -> anyhow::Result<(String, String)> {
    let task = json!({"inputs": {"lo": LO, "hi": HI, "chunk": CHUNK}}).to_string();
    let out =
        Command::new(py).arg(client_script()?).args([url, "send", &task, "--immediate", "--token", token]).output()?;
    let sent: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        anyhow::anyhow!(
            "a2a client failed ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    let tid = sent["task"]["id"].as_str().ok_or_else(|| anyhow::anyhow!("no task id in {sent}"))?.to_string();
    let hid = sent["task"]["metadata"]["dhp_handoff_id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no handoff id in {sent}"))?
        .to_string();
    say(&format!("client:  SendMessage → {tid} ({})", sent["task"]["status"]["state"].as_str().unwrap_or("?")));
    say(&format!("         its DHP handoff {}…: census [{LO}, {HI}) in {} chunks", &hid[..12], (HI - LO) / CHUNK));
    Ok((tid, hid))
}

/// The client polls GetTask for the whole run, recording every state: the
/// watcher, and the states it reported (the channel yields the rest).
fn watch(
    py: &Path,
    url: &str,
    tid: &str,
    token: &str,
) -> anyhow::Result<(Proc, Value, std::sync::mpsc::Receiver<Value>)> {
    let mut watch = Command::new(py);
    watch
        .arg(client_script()?)
        .args([url, "watch", tid, "--interval", "0.05", "--timeout", "120", "--token", token])
        .stdout(Stdio::piped());
    let mut watcher = Proc::spawn("a2a client", watch)?;
    let stdout = watcher.child.stdout.take().ok_or_else(|| anyhow::anyhow!("watcher has no stdout"))?;
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for v in
            BufReader::new(stdout).lines().map_while(Result::ok).filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        {
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    // The client's first poll lands before any worker starts (Python's
    // start-up can outlast the whole run on a loaded machine).
    let first_seen = rx.recv_timeout(PHASE).map_err(|_| anyhow::anyhow!("the a2a client reported no state"))?;
    Ok((watcher, first_seen, rx))
}

/// What the kill and the recovery came to.
struct Recovery {
    /// Checkpoints agent B had made when it was killed.
    k: u64,
    /// Kill → orphan.
    noticed: Duration,
    /// Agent C's `dhp work … recover --json` reply.
    c: Value,
}

/// Agent B claims and is SIGKILLed mid-task; the bridge's supervisor
/// orphans it; agent C recovers.
fn kill_and_recover(dhp: &Path, root: &Path, hid: &str, say: &mut dyn FnMut(&str)) -> anyhow::Result<Recovery> {
    let root_s = root.to_string_lossy().to_string();
    let mut cmd = Command::new(dhp);
    cmd.args(["work", &root_s, "--runner", "agent-b", "claim", hid, "--pace", "0.15"])
        .envs(ENV.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut b = Proc::spawn("agent-b", cmd)?;
    say("agent B: claimed the handoff, working");
    wait_for("agent B's checkpoints", || status(dhp, root, hid)["checkpoints"].as_u64().unwrap_or(0) >= KILL_AFTER)?;
    b.signal(nix::sys::signal::Signal::SIGKILL)?;
    b.wait_for(Duration::from_secs(5));
    let k = status(dhp, root, hid)["checkpoints"].as_u64().unwrap_or(0);
    say(&format!("agent B: SIGKILL after {k} checkpoints (mid-task)"));
    let noticed = wait_for("the orphan", || status(dhp, root, hid)["status"] == "orphaned")?;
    say(&format!("bridge:  supervisor orphaned it {:.0} ms after the kill", noticed.as_secs_f64() * 1e3));

    let c = Command::new(dhp)
        .args(["work", &root_s, "--runner", "agent-c", "recover", hid, "--json"])
        .envs(ENV.iter().copied())
        .output()?;
    let c: Value = serde_json::from_slice(&c.stdout).unwrap_or(Value::Null);
    say(&format!("agent C: recovered from n={} and ran {} chunks", c["resumed_from"], c["chunks_this_run"]));
    Ok(Recovery { k, noticed, c })
}

/// Run the demo; returns the summary (`ok` true when GREEN).
pub fn run(dhp_flag: Option<&Path>, say: &mut dyn FnMut(&str)) -> anyhow::Result<Value> {
    let py = python()?;
    let dhp = procs::locate_dhp(dhp_flag, &mut |m| say(m))?;
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().join("store");
    let root_s = root.to_string_lossy().to_string();
    let token = demo_token()?;
    let (mut bridge, url) = start_bridge(&dhp, &root_s, &token)?;
    say(&format!("bridge:  dhp a2a serving {url}"));
    let (tid, hid) = submit(&py, &url, &token, say)?;
    let (mut watcher, first_seen, rx) = watch(&py, &url, &tid, &token)?;
    say(&format!("client:  GetTask → {}", first_seen["state"].as_str().unwrap_or("?")));
    let rec = kill_and_recover(&dhp, &root, &hid, say)?;

    watcher.wait_for(PHASE);
    let mut lines = vec![first_seen];
    lines.extend(rx.iter());
    bridge.stop(Duration::from_secs(3));
    Ok(judge(&lines, &rec, &tid, &hid, say))
}

/// The verdict from what the client saw: only SUBMITTED/WORKING →
/// COMPLETED, the right result, no committed chunk redone.
fn judge(lines: &[Value], rec: &Recovery, tid: &str, hid: &str, say: &mut dyn FnMut(&str)) -> Value {
    let (k, c) = (rec.k, &rec.c);
    let states: Vec<String> = lines
        .iter()
        .filter_map(|l| l["state"].as_str())
        .map(|s| s.trim_start_matches("TASK_STATE_").to_string())
        .collect();
    let mut observed = vec!["SUBMITTED".to_string()];
    observed.extend(states.iter().cloned());
    observed.dedup();
    say(&format!("client saw: {}", observed.join(" → ")));
    let result = lines
        .last()
        .and_then(|l| l["task"]["artifacts"][0]["parts"][0]["text"].as_str())
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .unwrap_or(Value::Null);
    let want = census::expected(LO, HI, CHUNK);
    let only_working = observed
        .split_last()
        .is_some_and(|(l, rest)| l == "COMPLETED" && rest.iter().all(|s| s == "SUBMITTED" || s == "WORKING"));
    let redone = ((HI - LO) / CHUNK).saturating_sub(k).abs_diff(c["chunks_this_run"].as_u64().unwrap_or(u64::MAX));
    say(&format!(
        "result:  {} primes, sum {} ({})",
        result["prime_count"],
        result["prime_sum"],
        if result == want { "correct" } else { "WRONG" }
    ));
    say(&format!("rework:  {redone} committed chunks redone; at most the 1 chunk in flight at the kill was lost"));
    let ok = only_working && result == want && redone == 0;
    json!({"mode": "a2a", "task_id": tid, "handoff_id": hid, "observed": observed, "killed_after_checkpoints": k,
           "orphan_noticed_ms": (rec.noticed.as_secs_f64() * 1e3).round(), "result": result, "result_correct": result == want,
           "committed_chunks_redone": redone, "ok": ok})
}

/// The `--a2a` mode's entry: text on stdout (on stderr with `--json`, whose
/// summary object is then the only stdout line); exit 0 GREEN, 1 RED.
pub fn main(dhp_flag: Option<&Path>, json_out: bool) -> i32 {
    let mut say = |m: &str| {
        if json_out {
            eprintln!("{m}");
        } else {
            println!("{m}");
        }
    };
    let (code, mut summary) = match run(dhp_flag, &mut say) {
        Ok(s) if s["ok"] == true => (0, s),
        Ok(s) => (1, s),
        Err(e) => (1, json!({"mode": "a2a", "ok": false, "failure": format!("{e:#}")})),
    };
    say(if code == 0 { "A2A DEMO: GREEN" } else { "A2A DEMO: RED" });
    if let Some(f) = summary.get("failure").and_then(Value::as_str) {
        say(&format!("failure: {f}"));
    }
    if json_out {
        summary["verdict"] = json!(if code == 0 { "GREEN" } else { "RED" });
        println!("{summary}");
    }
    code
}
