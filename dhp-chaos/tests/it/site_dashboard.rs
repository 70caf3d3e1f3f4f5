//! `--dashboard`: a real round served live on a loopback port the run
//! picks (port 0). A plain HTTP client reads the event stream and sees
//! `live` events with the round's faults arrive while the round runs, and
//! `done` with the run's exit code at the end; headless Chromium loads the
//! page and its DOM shows the live section, filled in by the events. A
//! non-loopback address is refused (exit 2) before anything starts.
use crate::common::*;
use crate::site_support::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// The live section of a rendered DOM shows round `round` of seed `seed`,
/// and the page's script received at least `min_events` events.
fn check_live_dom(dom: &str, seed: u64, min_events: u64) -> Result<u64, String> {
    if tags_with(dom, &["section id=\"live\""]).is_empty() {
        return Err("no live section".into());
    }
    if text_of(dom, "live-seed") != Some(seed.to_string().as_str()) {
        return Err(format!("live seed {:?}, expected {seed}", text_of(dom, "live-seed")));
    }
    let n: u64 = text_of(dom, "live-events").and_then(|t| t.parse().ok()).ok_or("no event counter")?;
    if n < min_events {
        return Err(format!("the page received {n} live events, expected at least {min_events}"));
    }
    let kills: u64 = text_of(dom, "live-kills").and_then(|t| t.parse().ok()).ok_or("no kill counter")?;
    if kills == 0 {
        return Err("the live section shows no kill".into());
    }
    Ok(n)
}

/// One server-sent event: its name and data.
fn read_event(r: &mut impl BufRead) -> Option<(String, String)> {
    let (mut name, mut data) = (String::new(), String::new());
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if !name.is_empty() || !data.is_empty() {
                return Some((name, data));
            }
            continue;
        }
        if let Some(v) = line.strip_prefix("event: ") {
            name = v.into();
        } else if let Some(v) = line.strip_prefix("data: ") {
            data.push_str(v);
        }
    }
}

fn get(addr: &str, path: &str, token: &str) -> String {
    raw(addr, &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n"))
}

fn raw(addr: &str, request: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connecting to the dashboard");
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn the_dashboard_streams_the_round_while_it_runs() {
    let out = tempfile::tempdir().unwrap();
    let run = out.path().join("run");
    let mut cmd = Command::new(chaos_bin());
    // long enough (300 chunks at 0.03 s) for a browser to load the page while it runs
    cmd.args([
        "--allow-uncovered",
        "all",
        "--dashboard",
        "127.0.0.1:0",
        "--seed",
        "9090",
        "--handoffs",
        "2",
        "--chunks",
        "300",
        "--quiet",
    ])
    .arg("--out")
    .arg(&run)
    .arg("--dhp")
    .arg(dhp_bin())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut g = dhp_kit::ProcessGroup::spawn(cmd);
    let stdout = g.child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let (addr, token) = loop {
        let l = rx.recv_timeout(Duration::from_secs(120)).unwrap_or_else(|_| panic!("no dashboard line: {lines:#?}"));
        lines.push(l.clone());
        if let Some(rest) = l.strip_prefix("dhp-chaos: dashboard http://") {
            let token = rest.split("/login?token=").nth(1).and_then(|t| t.split_whitespace().next()).unwrap();
            break (rest.split('/').next().unwrap().to_string(), token.to_string());
        }
    };
    assert_eq!(token.len(), 32, "a random token: {token}");
    assert!(addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"), "{addr}");

    // the event stream, with a plain client, reconnecting as an EventSource does (a stream
    // lasts 1 s), on a thread of its own until `done` or the server is gone
    let events: Arc<Mutex<Vec<(bool, String, String)>>> = Arc::default();
    let (ev2, addr2, pid, token2) = (Arc::clone(&events), addr.clone(), g.pid(), token.clone());
    let collector = std::thread::spawn(move || {
        let mut statuses = Vec::new();
        while let Ok(mut s) = TcpStream::connect(&addr2) {
            write!(s, "GET /events HTTP/1.1\r\nHost: {addr2}\r\nAuthorization: Bearer {token2}\r\n\r\n").unwrap();
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            let mut r = BufReader::new(s);
            let mut status = String::new();
            if r.read_line(&mut status).unwrap_or(0) == 0 {
                break;
            }
            statuses.push(status);
            while let Some((name, data)) = read_event(&mut r) {
                let running = dhp_kit::alive(pid);
                let done = name == "done";
                ev2.lock().unwrap().push((running, name, data));
                if done {
                    return statuses;
                }
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        statuses
    });
    let live = |events: &[(bool, String, String)]| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e.0 && e.1 == "live")
            .filter_map(|e| serde_json::from_str::<Value>(&e.2).ok())
            .filter(|v| v["round"] == 0)
            .collect()
    };
    dhp_kit::wait_until(Duration::from_secs(120), "live events with faults while the round runs", || {
        let l = live(&events.lock().unwrap());
        l.len() >= 3 && l.last().is_some_and(|v| v["faults"].as_u64().unwrap_or(0) > 0)
    });
    assert!(g.child.try_wait().unwrap().is_none(), "the events came after the run, not while it ran");
    let seen = live(&events.lock().unwrap());
    let last = seen.last().unwrap();
    assert_eq!(last["seed"], 9090);
    assert!(last["recent_faults"].as_array().is_some_and(|f| !f.is_empty()), "{last:#}");
    // the counters only grow
    for w in seen.windows(2) {
        assert!(w[1]["faults"].as_u64() >= w[0]["faults"].as_u64(), "{seen:#?}");
    }

    // the page in a browser with a virtual time budget, while the round runs: the live section,
    // filled in by the events its script received
    let state = get(&addr, "/state.json", &token);
    assert!(state.contains("\"round\":0"), "{state}");
    assert!(get(&addr, "/../../etc/passwd", &token).starts_with("HTTP/1.1 404"), "a path outside the run directory");
    // issue 47 item 3: DNS rebinding (another Host, another Origin) and no token are refused
    let rebind =
        format!("GET /round-0000/ HTTP/1.1\r\nHost: rebind.attacker.test\r\nAuthorization: Bearer {token}\r\n\r\n");
    assert!(raw(&addr, &rebind).starts_with("HTTP/1.1 403"), "{}", raw(&addr, &rebind));
    let origin = format!(
        "GET /state.json HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://attacker.test\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    assert!(raw(&addr, &origin).starts_with("HTTP/1.1 403"));
    assert!(raw(&addr, &format!("GET /round-0000/ HTTP/1.1\r\nHost: {addr}\r\n\r\n")).starts_with("HTTP/1.1 401"));
    assert!(get(&addr, "/round-0000/", "wrong").starts_with("HTTP/1.1 401"));
    assert!(get(&addr, "/round-0000/", &token).starts_with("HTTP/1.1 200"));
    // a browser without the token sees nothing of the run
    let refused = dump_dom(&format!("http://{addr}/round-0000/"), 200);
    assert!(!refused.contains("history.jsonl") && refused.contains("login?token"), "{refused}");
    let url = format!("http://{addr}/login?token={token}");
    let dom = dump_dom(&url, 1500);
    assert!(g.child.try_wait().unwrap().is_none(), "the round ended before the browser was done: make it longer");
    let n = check_live_dom(&dom, 9090, 2).unwrap_or_else(|e| panic!("{e}\n--- DOM\n{dom}"));
    assert_eq!(text_of(&dom, "live-status"), Some("round 0 in progress"), "{dom}");
    println!("the live page received {n} events while the round ran");
    let png = keep_dir().join("site_dashboard.png");
    screenshot(&url, &png, &[]);
    println!("screenshot of the live page: {}", png.display());

    // the end: `done` with the run's exit code
    let statuses = collector.join().unwrap();
    assert!(statuses.iter().all(|s| s.starts_with("HTTP/1.1 200")), "{statuses:?}");
    let st = g.child.wait().unwrap();
    let all = events.lock().unwrap().clone();
    let done = all.iter().find(|e| e.1 == "done").unwrap_or_else(|| panic!("no `done` event: {all:#?}"));
    assert_eq!(st.code(), done.2.parse::<i32>().ok(), "the streamed exit code is the run's");
    assert_eq!(st.code(), Some(0));
    // the static page of the same run has no live section: the DOM check fails there
    let index = run.join("index.html");
    let static_dom = dump_dom(&file_url(&index), 500);
    assert!(check_live_dom(&static_dom, 9090, 1).is_err(), "the live check passed on a page without a live section");
    // ... and on the live page with no event received
    let no_events = dom.replace(&format!("id=\"live-events\">{n}<"), "id=\"live-events\">0<");
    assert!(check_live_dom(&no_events, 9090, 1).is_err(), "a page that received no event passed");
}

#[test]
fn a_non_loopback_dashboard_address_is_refused() {
    let out = tempfile::tempdir().unwrap();
    let run = out.path().join("run");
    for addr in ["0.0.0.0:8080", "192.0.2.7:80", "not-an-address"] {
        let o = Command::new(chaos_bin())
            .args(["--dashboard", addr, "--out"])
            .arg(&run)
            .output()
            .expect("running dhp-chaos");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{addr}: {err}");
        assert!(err.contains("--dashboard") && err.contains("loopback"), "{addr}: {err}");
        assert!(!run.exists(), "{addr}: the run started");
    }
}
