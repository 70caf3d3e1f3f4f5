//! `dhp work --workload URL`: chunks come from a harness's workload service
//! (dhp-chaos/CONTRACT.md §2.1), each checkpoint carries the answer's stamp,
//! and a service that is not there fails the run before anything is claimed.
use crate::cli_support::{failed, run, store_with_census};
use dhp_core::{Config, Runner, Status};
use dhp_workload::census;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// A service answering every chunk right, stamping answer i as `s<i>`, and
/// keeping each request's query.
fn service() -> (String, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let mut line = String::new();
            let mut r = BufReader::new(c.try_clone().unwrap());
            // `dhp work` first connects once and hangs up (is it there?)
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            // read the headers: closing with unread input would reset the connection
            let mut h = String::new();
            while r.read_line(&mut h).unwrap_or(0) > 0 && h != "\r\n" {
                h.clear();
            }
            let q = line.split_whitespace().nth(1).unwrap().trim_start_matches("/chunk?").to_string();
            let get = |k: &str| {
                q.split('&').find_map(|kv| kv.strip_prefix(&format!("{k}="))).unwrap().parse::<u64>().unwrap()
            };
            let (count, sum) = census::chunk(get("n"), get("end"));
            let mut seen = log.lock().unwrap();
            let body = format!(r#"{{"count":{count},"sum":{sum},"stamp":"s{}"}}"#, seen.len());
            seen.push(q);
            let mut c = c;
            write!(c, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
        }
    });
    (url, seen)
}

#[test]
fn chunks_come_from_the_service_and_checkpoints_carry_its_stamps() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let (url, seen) = service();
    let r = run(
        &["--json", "work", root.to_str().unwrap(), "--runner", "w1", "claim", &hid],
        &[("DHP_WORKLOAD_URL", &url)],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let runner = Runner::open(&root, "reader", Config::default()).unwrap();
    let rows = runner.checkpoints(&hid).unwrap();
    assert_eq!(rows.len(), 10);
    for (i, row) in rows.iter().enumerate() {
        let st: serde_json::Value = serde_json::from_str(&row.state_json).unwrap();
        assert_eq!(st["stamp"], format!("s{i}"), "seq {i}: {st}");
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 10, "one request per chunk: {seen:?}");
    assert_eq!(seen[0], format!("hid={hid}&n=1000&end=1100&holder=w1&fence=0"));
    let (c, s) = census::chunk(1000, 2000);
    assert_eq!((r.json()["prime_count"].as_u64(), r.json()["prime_sum"].as_u64()), (Some(c), Some(s)), "{r:?}");
}

#[test]
fn an_absent_service_fails_before_the_claim() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for url in [format!("http://127.0.0.1:{port}"), "ftp://x".to_string(), "http://127.0.0.1:1/chunk".to_string()] {
        let r = run(&["work", root.to_str().unwrap(), "--runner", "w1", "claim", &hid, "--workload", &url], &[]);
        let msg = failed(&r, 10, "TransportError");
        assert!(msg.contains("workload"), "{msg}");
    }
    let env = Runner::open(&root, "reader", Config::default()).unwrap().envelope_bare(&hid).unwrap();
    assert_eq!(Status::of(&env), Some(Status::Pending), "nothing was claimed");
}
