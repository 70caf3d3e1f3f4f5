//! OTLP/HTTP protobuf export of [`super::Span`]s, with the message types
//! the `opentelemetry-proto` crate generates from the official
//! definitions, on a background thread that batches and posts
//! `ExportTraceServiceRequest`s to `…/v1/traces`.
//!
//! The standard variables that apply (OpenTelemetry's "SDK environment
//! variables" and "OTLP exporter" specifications):
//!
//! | variable | use |
//! |---|---|
//! | `OTEL_SDK_DISABLED` | `true`: no tracing |
//! | `OTEL_TRACES_EXPORTER` | `none`: no tracing; `otlp` (default) |
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | the full URL to post to |
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | base URL; `/v1/traces` is appended. Neither set: no tracing |
//! | `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS` | `k=v,k2=v2` (values percent-decoded), sent on every post |
//! | `OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT` | per post, milliseconds (default 10000) |
//! | `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` | only `http/protobuf` (the default) |
//! | `OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION` | only `none` |
//! | `OTEL_SERVICE_NAME` | `service.name` (else from the resource attributes, else `dhp`) |
//! | `OTEL_RESOURCE_ATTRIBUTES` | `k=v,…` resource attributes |
//! | `OTEL_BSP_SCHEDULE_DELAY` | ms between exports (default 5000) |
//! | `OTEL_BSP_MAX_QUEUE_SIZE` | spans queued before new ones are dropped (default 2048) |
//! | `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` | spans per post (default 512) |
//!
//! A malformed value is a configuration error of the command, never a
//! panic. [`shutdown`] posts what is queued (every `dhp` command calls it
//! before it exits, a SIGTERM'd supervisor included).

use super::{Span, SpanStatus, Value};
use dhp_core::error::{Error, Result};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status, ResourceSpans, ScopeSpans, Status};
use prost::Message;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The exporter's settings, read from the environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The URL posted to.
    pub url: String,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
    /// Per-post timeout.
    pub timeout: Duration,
    /// Resource attributes, `service.name` included.
    pub resource: Vec<(String, String)>,
    /// Between exports.
    pub delay: Duration,
    /// Queue bound.
    pub max_queue: usize,
    /// Spans per post.
    pub max_batch: usize,
}

fn cfg_err(var: &str, val: &str, why: &str) -> Error {
    Error::config(format!("{var}={val:?}: {why}"))
}

/// `%XX` decoding (W3C baggage octets); a bad escape is an error.
fn percent_decode(var: &str, s: &str) -> Result<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or_else(|| cfg_err(var, s, "a '%' not followed by two hex digits"))?;
            let v = u8::from_str_radix(hex, 16).map_err(|_| cfg_err(var, s, "a '%' not followed by two hex digits"))?;
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| cfg_err(var, s, "not UTF-8 once decoded"))
}

/// `k=v,k2=v2` lists (headers, resource attributes).
fn pairs(var: &str, s: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').ok_or_else(|| cfg_err(var, s, "want key=value pairs separated by ','"))?;
        let k = percent_decode(var, k.trim())?;
        if k.is_empty() {
            return Err(cfg_err(var, s, "an empty key"));
        }
        out.push((k, percent_decode(var, v.trim())?));
    }
    Ok(out)
}

fn millis(var: &str, s: &str, max: u64) -> Result<Duration> {
    match s.trim().parse::<u64>() {
        Ok(ms) if ms <= max => Ok(Duration::from_millis(ms)),
        _ => Err(cfg_err(var, s, &format!("want milliseconds from 0 to {max}"))),
    }
}

fn count(var: &str, s: &str, max: usize) -> Result<usize> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(cfg_err(var, s, &format!("want a count from 1 to {max}"))),
    }
}

impl Settings {
    /// Read the settings through `get` (the environment, or a test's
    /// map); `None` when tracing is off.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>, command: &str) -> Result<Option<Settings>> {
        let var = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        // The traces-specific variable wins over the general one.
        let pick = |k: &str| {
            let specific = format!("OTEL_EXPORTER_OTLP_TRACES_{k}");
            var(&specific)
                .map(|v| (specific, v))
                .or_else(|| var(&format!("OTEL_EXPORTER_OTLP_{k}")).map(|v| (format!("OTEL_EXPORTER_OTLP_{k}"), v)))
        };
        if let Some(v) = var("OTEL_SDK_DISABLED") {
            match v.trim().to_ascii_lowercase().as_str() {
                "true" => return Ok(None),
                "false" => {}
                _ => return Err(cfg_err("OTEL_SDK_DISABLED", &v, "want true or false")),
            }
        }
        if let Some(v) = var("OTEL_TRACES_EXPORTER") {
            match v.trim() {
                "none" => return Ok(None),
                "otlp" => {}
                _ => return Err(cfg_err("OTEL_TRACES_EXPORTER", &v, "dhp exports otlp or none")),
            }
        }
        let url = match (var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), var("OTEL_EXPORTER_OTLP_ENDPOINT")) {
            (Some(u), _) => u.trim().to_string(),
            (None, Some(base)) => format!("{}/v1/traces", base.trim().trim_end_matches('/')),
            (None, None) => return Ok(None),
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(cfg_err("OTEL_EXPORTER_OTLP_ENDPOINT", &url, "want an http:// or https:// URL"));
        }
        if let Some((k, v)) = pick("PROTOCOL") {
            if v.trim() != "http/protobuf" {
                return Err(cfg_err(&k, &v, "dhp exports http/protobuf only"));
            }
        }
        if let Some((k, v)) = pick("COMPRESSION") {
            if v.trim() != "none" {
                return Err(cfg_err(&k, &v, "dhp sends uncompressed (none) only"));
            }
        }
        let mut headers = match var("OTEL_EXPORTER_OTLP_HEADERS") {
            Some(h) => pairs("OTEL_EXPORTER_OTLP_HEADERS", &h)?,
            None => Vec::new(),
        };
        if let Some(h) = var("OTEL_EXPORTER_OTLP_TRACES_HEADERS") {
            for (k, v) in pairs("OTEL_EXPORTER_OTLP_TRACES_HEADERS", &h)? {
                headers.retain(|(x, _)| !x.eq_ignore_ascii_case(&k));
                headers.push((k, v));
            }
        }
        for (k, v) in &headers {
            let ok_name = k.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !ok_name || v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(cfg_err("OTEL_EXPORTER_OTLP_HEADERS", k, "not a valid HTTP header"));
            }
        }
        let timeout = match pick("TIMEOUT") {
            Some((k, v)) => millis(&k, &v, 600_000)?,
            None => Duration::from_secs(10),
        };
        let mut resource = match var("OTEL_RESOURCE_ATTRIBUTES") {
            Some(r) => pairs("OTEL_RESOURCE_ATTRIBUTES", &r)?,
            None => Vec::new(),
        };
        let service = var("OTEL_SERVICE_NAME")
            .map(|s| s.trim().to_string())
            .or_else(|| resource.iter().find(|(k, _)| k == "service.name").map(|(_, v)| v.clone()))
            .unwrap_or_else(|| "dhp".to_string());
        resource.retain(|(k, _)| k != "service.name");
        resource.insert(0, ("service.name".into(), service));
        resource.push(("process.pid".into(), std::process::id().to_string()));
        resource.push(("dhp.command".into(), command.to_string()));
        let delay = match var("OTEL_BSP_SCHEDULE_DELAY") {
            Some(v) => millis("OTEL_BSP_SCHEDULE_DELAY", &v, 3_600_000)?,
            None => Duration::from_secs(5),
        };
        let max_queue = match var("OTEL_BSP_MAX_QUEUE_SIZE") {
            Some(v) => count("OTEL_BSP_MAX_QUEUE_SIZE", &v, 1 << 20)?,
            None => 2048,
        };
        let max_batch = match var("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") {
            Some(v) => count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", &v, 1 << 20)?,
            None => 512,
        };
        Ok(Some(Settings { url, headers, timeout, resource, delay, max_queue, max_batch: max_batch.min(max_queue) }))
    }
}

fn kv(k: &str, v: &Value) -> KeyValue {
    let value = match v {
        Value::Str(s) => any_value::Value::StringValue(s.clone()),
        Value::Int(i) => any_value::Value::IntValue(*i),
        Value::Bool(b) => any_value::Value::BoolValue(*b),
    };
    KeyValue { key: k.to_string(), value: Some(AnyValue { value: Some(value) }), ..Default::default() }
}

fn to_proto(s: &Span) -> opentelemetry_proto::tonic::trace::v1::Span {
    let (code, message) = match &s.status {
        SpanStatus::Unset => (status::StatusCode::Unset, String::new()),
        SpanStatus::Ok => (status::StatusCode::Ok, String::new()),
        SpanStatus::Error(m) => (status::StatusCode::Error, m.clone()),
    };
    opentelemetry_proto::tonic::trace::v1::Span {
        trace_id: s.trace_id.to_vec(),
        span_id: s.span_id.to_vec(),
        name: s.name.to_string(),
        kind: span::SpanKind::Internal as i32,
        start_time_unix_nano: s.start_ns,
        end_time_unix_nano: s.end_ns,
        attributes: s.attrs.iter().map(|(k, v)| kv(k, v)).collect(),
        events: s
            .events
            .iter()
            .map(|e| span::Event {
                time_unix_nano: e.time_ns,
                name: e.name.to_string(),
                attributes: e.attrs.iter().map(|(k, v)| kv(k, v)).collect(),
                ..Default::default()
            })
            .collect(),
        dropped_events_count: s.dropped_events,
        links: s
            .links
            .iter()
            .map(|l| span::Link {
                trace_id: l.trace_id.to_vec(),
                span_id: l.span_id.to_vec(),
                attributes: l.attrs.iter().map(|(k, v)| kv(k, v)).collect(),
                ..Default::default()
            })
            .collect(),
        status: Some(Status { message, code: code as i32 }),
        ..Default::default()
    }
}

/// The protobuf body of one export of `spans`.
pub fn encode(resource: &[(String, String)], spans: &[Span]) -> Vec<u8> {
    let req = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: resource.iter().map(|(k, v)| kv(k, &Value::Str(v.clone()))).collect(),
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "dhp-core".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                spans: spans.iter().map(to_proto).collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    req.encode_to_vec()
}

enum Msg {
    Span(Box<Span>),
    Flush(SyncSender<()>),
}

static QUEUE: OnceLock<Mutex<Option<SyncSender<Msg>>>> = OnceLock::new();
/// Spans dropped because the queue was full or the exporter gone.
pub static DROPPED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Posts that failed.
pub static FAILED_EXPORTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Read the OTEL_* variables; when an endpoint is set, start the export
/// thread and turn recording on. Returns whether tracing is on.
pub fn init_from_env(command: &str) -> Result<bool> {
    let Some(s) = Settings::from_lookup(|k| std::env::var(k).ok(), command)? else {
        return Ok(false);
    };
    start(s)
}

/// Start exporting with `s` (once per process).
pub fn start(s: Settings) -> Result<bool> {
    let (tx, rx) = sync_channel::<Msg>(s.max_queue);
    let agent = ureq::AgentBuilder::new().timeout(s.timeout).build();
    std::thread::Builder::new()
        .name("dhp-otlp".into())
        .spawn(move || export_loop(&agent, &s, &rx))
        .map_err(|e| Error::config(format!("cannot start the OTLP export thread: {e}")))?;
    let q = QUEUE.get_or_init(|| Mutex::new(None));
    *q.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx.clone());
    Ok(super::install(Box::new(move |span| match tx.try_send(Msg::Span(Box::new(span))) {
        Ok(()) => {}
        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
            DROPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    })))
}

/// Post everything queued, waiting at most `timeout` (a no-op when
/// tracing is off).
pub fn shutdown(timeout: Duration) {
    let Some(q) = QUEUE.get() else { return };
    let Some(tx) = q.lock().unwrap_or_else(|p| p.into_inner()).clone() else { return };
    let (done_tx, done) = sync_channel(1);
    let end = Instant::now() + timeout;
    // The queue may be full: keep offering the flush until the deadline.
    let mut msg = Msg::Flush(done_tx);
    loop {
        match tx.try_send(msg) {
            Ok(()) => break,
            Err(TrySendError::Full(m)) if Instant::now() < end => {
                msg = m;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return,
        }
    }
    let _ = done.recv_timeout(end.saturating_duration_since(Instant::now()));
}

fn export_loop(agent: &ureq::Agent, s: &Settings, rx: &Receiver<Msg>) {
    let mut batch: Vec<Span> = Vec::new();
    let mut due = Instant::now() + s.delay;
    loop {
        let wait = due.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(Msg::Span(span)) => {
                batch.push(*span);
                if batch.len() >= s.max_batch {
                    post(agent, s, &mut batch);
                }
            }
            Ok(Msg::Flush(done)) => {
                // Spans queued before the flush are in the batch by now.
                while let Ok(Msg::Span(span)) = rx.try_recv() {
                    batch.push(*span);
                }
                while !batch.is_empty() {
                    post(agent, s, &mut batch);
                }
                let _ = done.send(());
            }
            Err(RecvTimeoutError::Timeout) => {
                if !batch.is_empty() {
                    post(agent, s, &mut batch);
                }
                due = Instant::now() + s.delay;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Post up to `max_batch` spans of `batch` (removed from it either way: a
/// failed export is logged and dropped, as the SDKs' exporters do).
fn post(agent: &ureq::Agent, s: &Settings, batch: &mut Vec<Span>) {
    let n = batch.len().min(s.max_batch);
    let spans: Vec<Span> = batch.drain(..n).collect();
    let body = encode(&s.resource, &spans);
    let mut req = agent.post(&s.url).set("Content-Type", "application/x-protobuf");
    for (k, v) in &s.headers {
        req = req.set(k, v);
    }
    match req.send_bytes(&body) {
        Ok(_) => {}
        Err(e) => {
            FAILED_EXPORTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::warn!(url = %s.url, spans = n, error = %e, "OTLP export failed; spans dropped");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<Settings>> {
        let m: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::from_lookup(|k| m.get(k).cloned(), "test")
    }

    #[test]
    fn off_unless_an_endpoint_is_set() {
        assert_eq!(settings(&[]).unwrap(), None);
        assert_eq!(settings(&[("OTEL_SERVICE_NAME", "x")]).unwrap(), None);
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")];
        assert_eq!(settings(&on).unwrap().unwrap().url, "http://c:4318/v1/traces");
        assert_eq!(settings(&[on[0], ("OTEL_SDK_DISABLED", "true")]).unwrap(), None);
        assert_eq!(settings(&[on[0], ("OTEL_TRACES_EXPORTER", "none")]).unwrap(), None);
    }

    #[test]
    fn standard_variables_are_honoured() {
        let s = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored:1"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://c:4318/custom"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1, b=x%20y"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "A=2"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "250"),
            ("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,deployment.environment=ci"),
            ("OTEL_SERVICE_NAME", "sup-1"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.url, "https://c:4318/custom");
        assert_eq!(s.headers, vec![("b".into(), "x y".into()), ("A".into(), "2".into())]);
        assert_eq!(s.timeout, Duration::from_millis(250));
        assert_eq!(s.resource[0], ("service.name".to_string(), "sup-1".to_string()));
        assert!(s.resource.contains(&("deployment.environment".into(), "ci".into())));
        assert_eq!(s.resource.iter().filter(|(k, _)| k == "service.name").count(), 1);
        assert_eq!(s.delay, Duration::from_millis(100));
        let s =
            settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"), ("OTEL_RESOURCE_ATTRIBUTES", "service.name=r")]);
        assert_eq!(s.unwrap().unwrap().resource[0].1, "r");
    }

    #[test]
    fn malformed_values_are_config_errors() {
        let e = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        for bad in [
            [e, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
            [e, ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")],
            [e, ("OTEL_EXPORTER_OTLP_HEADERS", "novalue")],
            [e, ("OTEL_EXPORTER_OTLP_HEADERS", "a=%zz")],
            [e, ("OTEL_EXPORTER_OTLP_HEADERS", "bad header=1")],
            [e, ("OTEL_EXPORTER_OTLP_HEADERS", "a=1%0D%0AX: y")],
            [e, ("OTEL_EXPORTER_OTLP_TIMEOUT", "-1")],
            [e, ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")],
            [e, ("OTEL_SDK_DISABLED", "maybe")],
            [e, ("OTEL_BSP_MAX_QUEUE_SIZE", "0")],
            [("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4318"), ("OTEL_SERVICE_NAME", "x")],
            [e, ("OTEL_TRACES_EXPORTER", "zipkin")],
        ] {
            let r = settings(&bad);
            assert!(matches!(r, Err(Error::Config { .. })), "{bad:?}: {r:?}");
        }
    }

    #[test]
    fn encoding_decodes_with_the_official_types() {
        let hid = "217740d038afbda200105fd31d9362c8f573b8102829b343cfe2be44bd4c9d9f";
        let span = Span {
            trace_id: super::super::trace_id(hid),
            span_id: super::super::attempt_span_id(hid, 0),
            name: "dhp.attempt",
            start_ns: 1,
            end_ns: 2,
            attrs: vec![("dhp.fence", Value::Int(0))],
            events: vec![super::super::checkpoint_event(3, 2)],
            dropped_events: 0,
            links: Vec::new(),
            status: SpanStatus::Error("death".into()),
        };
        let body = encode(&[("service.name".into(), "t".into())], &[span]);
        let req = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        let s = &req.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(hex::encode(&s.trace_id), &hid[..32]);
        assert_eq!(s.events[0].attributes[0].value.as_ref().unwrap().value, Some(any_value::Value::IntValue(3)));
        assert_eq!(s.status.as_ref().unwrap().code, status::StatusCode::Error as i32);
    }
}
