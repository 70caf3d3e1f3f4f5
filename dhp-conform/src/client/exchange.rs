//! The JSON-lines exchange with an adapter: requests, replies, their
//! checks, and the per-request timeout.

use super::{Adapter, AdapterError, ErrorReply, Hello, Reply};
use crate::protocol;
use dhp_adapter_proto::{args, Op, ReplyLine, Request, RequestLine, Response};
use serde_json::Value;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// The longest reply line the runner reads (the largest legitimate reply,
/// `load_envelope` of a handoff at the default profile's limits, is well
/// under 1 MiB). A longer line is an exchange error, and the runner stops
/// reading at the limit instead of buffering it whole.
pub const MAX_REPLY_LINE: usize = 16 << 20;

/// What the stdout reader thread hands over.
pub(super) enum Incoming {
    Line(String),
    /// A line longer than [`MAX_REPLY_LINE`]; the reader stopped there.
    TooLong,
    Eof,
}

/// The `hello` the runner opens with.
pub(super) fn hello_request() -> Request {
    Request::Hello(args::Hello { adapter_protocol: protocol::ADAPTER_PROTOCOL })
}

impl Adapter {
    /// Send `hello` and check the answer.
    pub fn handshake(&mut self) -> Result<&Hello, AdapterError> {
        let id = self.send_request(hello_request(), None)?;
        self.finish_handshake(id)
    }

    /// Receive the `hello` answer for a request sent with [`Adapter::send`].
    pub fn finish_handshake(&mut self, id: u64) -> Result<&Hello, AdapterError> {
        match self.recv(id, "hello")? {
            Reply::Ok(v) => match Hello::from_result(v) {
                Some(h) => Ok(self.hello.insert(h)),
                None => {
                    self.broken = true;
                    Err(AdapterError::Handshake("hello result is not one".into()))
                }
            },
            Reply::Err(e) => {
                self.broken = true;
                Err(AdapterError::Handshake(format!("hello refused: {e}")))
            }
        }
    }

    pub(super) fn tail(&self) -> String {
        let t = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        if t.is_empty() {
            String::new()
        } else {
            let lines: Vec<&str> = t.iter().rev().take(5).rev().map(String::as_str).collect();
            format!("; adapter stderr tail: {}", lines.join(" | "))
        }
    }

    /// Write one request of `op` with `args`; returns its id. `at` is the
    /// barrier time. The op and its args are read as a typed request
    /// first: a request the protocol has no shape for is the runner's bug.
    pub fn send(&mut self, op: &str, args: Value, at: Option<f64>) -> Result<u64, AdapterError> {
        let bad = |detail: String| AdapterError::BadRequest { op: op.into(), detail };
        let typed = Op::from_name(op).ok_or_else(|| bad(format!("unknown op {op:?}")))?;
        let request = Request::from_args(typed, args).map_err(|e| bad(e.to_string()))?;
        self.send_request(request, at)
    }

    /// Write one typed request; returns its id. `at` is the barrier time.
    pub fn send_request(&mut self, request: Request, at: Option<f64>) -> Result<u64, AdapterError> {
        let id = self.next_id;
        self.next_id += 1;
        let op = request.op();
        // absent means 0: a process keeps its own clock until time was moved
        let clock_offset_s = match self.clock.as_ref().map(super::ClockOffset::get) {
            Some(offset) if offset > 0.0 && op != Op::Hello => Some(offset),
            _ => None,
        };
        let req = RequestLine { id, request, at, clock_offset_s }.to_value();
        protocol::validate_request(&req)
            .map_err(|e| AdapterError::BadRequest { op: op.as_str().into(), detail: e.to_string() })?;
        let mut line = req.to_string().into_bytes();
        line.push(b'\n');
        let res = match self.stdin.as_mut() {
            Some(w) => w.write_all(&line).and_then(|_| w.flush()),
            None => Err(std::io::Error::other("stdin closed")),
        };
        if let Err(e) = res {
            self.broken = true;
            // A dead process is the real story; report that if we can.
            std::thread::sleep(Duration::from_millis(20));
            if let Some(status) = self.exit_status() {
                return Err(AdapterError::Exited { op: op.as_str().into(), status, tail: self.tail() });
            }
            return Err(AdapterError::Io(e.to_string()));
        }
        Ok(id)
    }

    /// Wait for the reply to request `id`.
    pub fn recv(&mut self, id: u64, op: &str) -> Result<Reply, AdapterError> {
        let res = self.recv_inner(id, op);
        if let Err(e) = &res {
            self.broken = true;
            if matches!(e, AdapterError::Timeout { .. }) {
                if let Some(n) = &self.timeouts {
                    n.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        res
    }

    fn recv_inner(&mut self, id: u64, op: &str) -> Result<Reply, AdapterError> {
        let deadline = Instant::now() + self.timeout;
        let line = match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Incoming::Line(l)) => l,
            Ok(Incoming::TooLong) => return Err(AdapterError::TooLong { op: op.into(), tail: self.tail() }),
            Ok(Incoming::Eof) | Err(RecvTimeoutError::Disconnected) => {
                let status = self.wait_exit(Duration::from_millis(500));
                return Err(AdapterError::Exited { op: op.into(), status, tail: self.tail() });
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(AdapterError::Timeout {
                    op: op.into(),
                    secs: self.timeout.as_secs_f64(),
                    tail: self.tail(),
                })
            }
        };
        let v: Value = match serde_json::from_str(&line) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                let mut shown: String = line.chars().take(200).collect();
                if shown.len() < line.len() {
                    shown.push('…');
                }
                return Err(AdapterError::Garbage { op: op.into(), line: shown, tail: self.tail() });
            }
        };
        if v.get("id").and_then(Value::as_u64) != Some(id) {
            let got = v.get("id").map(|i| i.to_string()).unwrap_or_else(|| "none".into());
            return Err(AdapterError::WrongId { op: op.into(), expected: id, got });
        }
        protocol::validate_reply(op, &v).map_err(|e| AdapterError::Schema { op: op.into(), detail: e.to_string() })?;
        // the schema passed; the typed reading is the runner's own second look
        let schema = |detail: String| AdapterError::Schema { op: op.into(), detail };
        let reply = ReplyLine::parse(&v).map_err(|e| schema(e.to_string()))?;
        match reply.outcome {
            Ok(result) => {
                let result = Value::Object(result);
                let typed = Op::from_name(op).ok_or_else(|| schema(format!("no op {op:?}")))?;
                Response::from_result(typed, result.clone()).map_err(|e| schema(e.to_string()))?;
                Ok(Reply::Ok(result))
            }
            Err(e) => Ok(Reply::Err(ErrorReply { kind: e.kind, message: e.message })),
        }
    }

    /// Send and wait.
    pub fn call(&mut self, op: &str, args: Value) -> Result<Reply, AdapterError> {
        let id = self.send(op, args, None)?;
        self.recv(id, op)
    }
}
