//! The JSON-lines exchange with an adapter: requests, replies, their
//! checks, and the per-request timeout.

use super::{Adapter, AdapterError, ErrorReply, Hello, Reply};
use crate::protocol;
use serde_json::{json, Value};
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

impl Adapter {
    /// Send `hello` and check the answer.
    pub fn handshake(&mut self) -> Result<&Hello, AdapterError> {
        let id = self.send("hello", json!({"adapter_protocol": protocol::ADAPTER_PROTOCOL}), None)?;
        self.finish_handshake(id)
    }

    /// Receive the `hello` answer for a request sent with [`Adapter::send`].
    pub fn finish_handshake(&mut self, id: u64) -> Result<&Hello, AdapterError> {
        match self.recv(id, "hello")? {
            Reply::Ok(v) => Ok(self.hello.insert(Hello::from_result(&v))),
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

    /// Write one request; returns its id. `at` is the barrier time.
    pub fn send(&mut self, op: &str, args: Value, at: Option<f64>) -> Result<u64, AdapterError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut req = json!({"id": id, "op": op, "args": args});
        if let Some(at) = at {
            req["at"] = json!(at);
        }
        // absent means 0: a process keeps its own clock until time was moved
        match self.clock.as_ref().map(super::ClockOffset::get) {
            Some(offset) if offset > 0.0 && op != "hello" => req["clock_offset_s"] = json!(offset),
            _ => {}
        }
        protocol::validate_request(&req)
            .map_err(|e| AdapterError::BadRequest { op: op.into(), detail: e.to_string() })?;
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
                return Err(AdapterError::Exited { op: op.into(), status, tail: self.tail() });
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
        if v["ok"] == Value::Bool(true) {
            Ok(Reply::Ok(v["result"].clone()))
        } else {
            let e = &v["error"];
            Ok(Reply::Err(ErrorReply {
                kind: e["kind"].as_str().unwrap_or_default().to_string(),
                message: e["message"].as_str().unwrap_or_default().to_string(),
            }))
        }
    }

    /// Send and wait.
    pub fn call(&mut self, op: &str, args: Value) -> Result<Reply, AdapterError> {
        let id = self.send(op, args, None)?;
        self.recv(id, op)
    }
}
