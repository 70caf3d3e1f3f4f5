//! OpenTelemetry traces across attempts, against an OTLP/HTTP receiver
//! built here on the official protobuf definitions (the
//! `opentelemetry-proto` crate's `ExportTraceServiceRequest`, decoded with
//! prost; no collector is packaged by Debian or PyPI). `dhp work` claims,
//! is SIGKILLed, `dhp supervisor` orphans the handoff, another `dhp work`
//! recovers and completes it, the supervisor is SIGTERMed; then the span
//! tree must be: one trace (the handoff's id), two attempt spans — the
//! first closed by the supervisor as a death, the second completed by the
//! recoverer — an orphan span of the supervisor linked to the first, and
//! checkpoint events whose seqs are each checkpoint exactly once. The
//! supervisor exports only at its SIGTERM flush (a one-hour batch delay).
//!
//! The supervisor stops (failpoint `orphan.before_trace=stop@1`) between
//! the orphan's commit and the dead attempt's span, and goes on only after
//! the recoverer completed: what a loaded machine does now and then, made
//! certain. The dead attempt must still end at the orphan's commit, before
//! the recovery starts (it ended when the span was recorded, and the test
//! failed one run in a few under load).
use crate::common::*;
use crate::metrics_support::Proc;
use dhp_core::{Config, Runner};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the receiver got: (service.name, span) and the request headers.
#[derive(Default)]
struct Got {
    spans: Vec<(String, Span)>,
    headers: Vec<String>,
    bad: Vec<String>,
}

/// An OTLP/HTTP receiver: `POST /v1/traces`, protobuf body.
fn receiver() -> (String, Arc<Mutex<Got>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("http://{}", l.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Got::default()));
    let g = got.clone();
    std::thread::spawn(move || {
        for sock in l.incoming().map_while(Result::ok) {
            let mut r = BufReader::new(sock);
            let mut line = String::new();
            if r.read_line(&mut line).is_err() {
                continue;
            }
            let mut len = 0usize;
            let mut headers = Vec::new();
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                headers.push(h.trim_end().to_string());
            }
            let mut body = vec![0u8; len];
            let ok = r.read_exact(&mut body).is_ok();
            let mut g = g.lock().unwrap();
            let status = match ExportTraceServiceRequest::decode(body.as_slice()) {
                Ok(req) if ok && line.starts_with("POST /v1/traces ") => {
                    for rs in req.resource_spans {
                        let service = rs
                            .resource
                            .as_ref()
                            .and_then(|res| res.attributes.iter().find(|a| a.key == "service.name"))
                            .map(|a| text(a).to_string())
                            .unwrap_or_default();
                        for ss in rs.scope_spans {
                            g.spans.extend(ss.spans.into_iter().map(|s| (service.clone(), s)));
                        }
                    }
                    g.headers.extend(headers);
                    "200 OK"
                }
                other => {
                    g.bad.push(format!("{line:?} {other:?}"));
                    "400 Bad Request"
                }
            };
            let mut sock = r.into_inner();
            let _ = write!(
                sock,
                "HTTP/1.1 {status}\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    (addr, got)
}

fn text(a: &KeyValue) -> &str {
    match a.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s,
        _ => "",
    }
}

fn attr<'a>(s: &'a Span, k: &str) -> Option<&'a any_value::Value> {
    s.attributes.iter().find(|a| a.key == k).and_then(|a| a.value.as_ref()).and_then(|v| v.value.as_ref())
}

fn attr_str<'a>(s: &'a Span, k: &str) -> &'a str {
    match attr(s, k) {
        Some(any_value::Value::StringValue(v)) => v,
        _ => "",
    }
}

fn attr_int(s: &Span, k: &str) -> Option<i64> {
    match attr(s, k) {
        Some(any_value::Value::IntValue(v)) => Some(*v),
        _ => None,
    }
}

fn seqs(s: &Span) -> Vec<i64> {
    s.events
        .iter()
        .filter(|e| e.name == "dhp.checkpoint")
        .filter_map(|e| match e.attributes.iter().find(|a| a.key == "dhp.checkpoint.seq")?.value.as_ref()?.value {
            Some(any_value::Value::IntValue(n)) => Some(n),
            _ => None,
        })
        .collect()
}

fn spawn(args: &[&str], endpoint: &str, service: &str, extra: &[(&str, &str)]) -> Proc {
    Proc(
        Command::new(dhp_bin())
            .args(args)
            .env("DHP_LEASE_INTERVAL_S", "10")
            .env("DHP_SUPERVISOR_SCAN_S", "0.2")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
            .env("OTEL_SERVICE_NAME", service)
            .env("OTEL_EXPORTER_OTLP_HEADERS", "x-dhp-test=trace%20ok")
            .envs(extra.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    )
}

#[test]
fn one_trace_per_handoff_two_attempts_a_death_closed_by_the_supervisor_and_the_orphan_linked() {
    let (endpoint, got) = receiver();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (_, v, _) = dhp(&["dispatch", root, "--census", "0,40000,1000"], &[]);
    let hid = v["hid"].as_str().unwrap().to_string();
    let hist = dir.path().join("sup.history");
    // A one-hour batch delay: the supervisor's spans leave only through
    // the flush at its SIGTERM.
    let mut sup = spawn(
        &["supervisor", root, "sup", "300", "--history", hist.to_str().unwrap()],
        &endpoint,
        "dhp-sup",
        &[("OTEL_BSP_SCHEDULE_DELAY", "3600000"), ("DHP_FAILPOINTS", "orphan.before_trace=stop@1")],
    );
    wait_for_passes(&hist, "sup", 2, 30.0);
    let r = Runner::open(root, "observer", Config::default()).unwrap();
    let mut w1 = spawn(&["work", root, "--runner", "w1", "claim", &hid, "--pace", "0.05"], &endpoint, "dhp-w1", &[]);
    dhp_testkit::wait_until(std::time::Duration::from_secs_f64(60.0), "w1 checkpointed", || {
        r.status(&hid).unwrap()["checkpoints"].as_i64() >= Some(3)
    });
    w1.0.kill().unwrap();
    w1.0.wait().unwrap();
    dhp_testkit::wait_until(std::time::Duration::from_secs_f64(30.0), "orphaned", || {
        r.status(&hid).unwrap()["status"] == "orphaned"
    });
    let end = Instant::now() + Duration::from_secs(30);
    while !dhp_testkit::helpers::stopped(sup.0.id()) {
        assert!(Instant::now() < end, "the supervisor never reached orphan.before_trace");
        assert!(sup.0.try_wait().unwrap().is_none(), "the supervisor exited");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut w2 = spawn(&["work", root, "--runner", "w2", "recover", &hid], &endpoint, "dhp-w2", &[]);
    assert!(w2.0.wait().unwrap().success());
    // Resumed after the recovery started: a span ended "now" overlaps it.
    kill(Pid::from_raw(sup.0.id() as i32), Signal::SIGCONT).unwrap();
    assert_eq!(r.status(&hid).unwrap()["status"], "completed");
    let total = r.status(&hid).unwrap()["checkpoints"].as_i64().unwrap();
    assert_eq!(total, 40);
    // w2 exported at its exit; the supervisor has not (one-hour delay).
    let sup_spans = || got.lock().unwrap().spans.iter().filter(|(svc, _)| svc == "dhp-sup").count();
    dhp_testkit::wait_until(std::time::Duration::from_secs_f64(10.0), "w2's span", || {
        got.lock().unwrap().spans.iter().any(|(svc, _)| svc == "dhp-w2")
    });
    assert_eq!(sup_spans(), 0, "the supervisor exported before its flush");
    crate::metrics_support::term(&mut sup);
    dhp_testkit::wait_until(std::time::Duration::from_secs_f64(10.0), "the supervisor's flushed spans", || {
        sup_spans() >= 2
    });

    let g = got.lock().unwrap();
    assert!(g.bad.is_empty(), "{:?}", g.bad);
    assert!(g.headers.iter().any(|h| h.eq_ignore_ascii_case("x-dhp-test: trace ok")), "{:?}", g.headers);
    let trace = hex::decode(&hid[..32]).unwrap();
    let attempts: Vec<&(String, Span)> = g.spans.iter().filter(|(_, s)| s.name == "dhp.attempt").collect();
    assert_eq!(attempts.len(), 2, "{:#?}", g.spans);
    assert!(attempts.iter().all(|(_, s)| s.trace_id == trace && s.parent_span_id.is_empty()));
    let by_fence = |f: i64| attempts.iter().find(|(_, s)| attr_int(s, "dhp.fence") == Some(f)).unwrap();
    let (svc1, a1) = by_fence(0);
    let (svc2, a2) = by_fence(2);
    assert_ne!(a1.span_id, a2.span_id);
    // The first attempt ended by death, closed by the supervisor.
    assert_eq!(svc1, "dhp-sup");
    assert_eq!(attr_str(a1, "dhp.attempt.outcome"), "death");
    assert_eq!(attr_str(a1, "dhp.attempt.closed_by"), "supervisor sup");
    assert_eq!(attr_str(a1, "dhp.orphan.reason"), "worker-died");
    assert_eq!(attr_str(a1, "dhp.worker"), "w1");
    assert_eq!(a1.status.as_ref().unwrap().code, 2, "error");
    // The second completed, closed by its own worker.
    assert_eq!(svc2, "dhp-w2");
    assert_eq!(attr_str(a2, "dhp.attempt.outcome"), "complete");
    assert_eq!(attr_str(a2, "dhp.attempt.start"), "recover");
    assert_eq!(a2.status.as_ref().unwrap().code, 1, "ok");
    assert!(a1.start_time_unix_nano <= a1.end_time_unix_nano && a1.end_time_unix_nano <= a2.start_time_unix_nano);
    assert!(a2.start_time_unix_nano <= a2.end_time_unix_nano);
    // Checkpoint events: every seq exactly once, w1's before w2's.
    let (s1, s2) = (seqs(a1), seqs(a2));
    assert!(s1.len() >= 3, "{s1:?}");
    let all: Vec<i64> = s1.iter().chain(&s2).copied().collect();
    assert_eq!(all, (0..total).collect::<Vec<_>>(), "w1 {s1:?} w2 {s2:?}");
    // The orphan: a span of the supervisor in a trace of its own, linked
    // to the dead attempt; the recovery links to the orphan.
    let orphans: Vec<&(String, Span)> = g.spans.iter().filter(|(_, s)| s.name == "dhp.orphan").collect();
    assert_eq!(orphans.len(), 1);
    let (svc_o, o) = orphans[0];
    assert_eq!(svc_o, "dhp-sup");
    assert_ne!(o.trace_id, trace);
    assert_eq!(attr_str(o, "dhp.orphan.reason"), "worker-died");
    assert!(o.links.iter().any(|l| l.trace_id == trace && l.span_id == a1.span_id), "{:?}", o.links);
    assert!(a2.links.iter().any(|l| l.trace_id == o.trace_id && l.span_id == o.span_id), "{:?}", a2.links);
    assert!(a2.links.iter().any(|l| l.span_id == a1.span_id));
    assert_eq!(g.spans.len(), 3, "{:#?}", g.spans);
}

#[test]
fn tracing_off_without_an_endpoint_and_bad_otel_variables_are_config_errors() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, _, err) = dhp(
        &["dispatch", root, "--census", "0,1000,100"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
    );
    assert_eq!(code, 11, "{err}");
    assert!(err.starts_with("dhp: ConfigError: ") && err.contains("OTEL_EXPORTER_OTLP_PROTOCOL=\"grpc\""), "{err}");
    let (code, v, err) = dhp(&["dispatch", root, "--census", "0,1000,100"], &[("OTEL_SERVICE_NAME", "x")]);
    assert_eq!(code, 0, "{err}");
    assert!(v["hid"].is_string());
}
