//! The streaming methods (`SendStreamingMessage`, `SubscribeToTask`):
//! server-sent events, each a JSON-RPC response whose result is a
//! `StreamResponse`. The first event is the Task; then a status update for
//! every change of A2A state seen in the store (polled), the result
//! artifact before COMPLETED, and the stream ends at a terminal state, when
//! the client hangs up, or when the server shuts down.

use super::http::{blocking, create_task, POLL};
use super::rpc;
use super::{tasks, App};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Json, Response};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// How often an idle stream sends an SSE comment. Besides keeping proxies
/// from timing the stream out, the write is how a client that vanished
/// without closing its socket (no FIN) is noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub async fn send_streaming(app: Arc<App>, id: Value, params: Value) -> Response {
    match create_task(&app, &params).await {
        Ok((tid, task)) => open(app, id, tid, task),
        Err(e) => Json(rpc::failure(&id, &e)).into_response(),
    }
}

pub async fn subscribe(app: Arc<App>, id: Value, params: Value) -> Response {
    let tid = match rpc::str_param(&params, "id") {
        Ok(t) => t.to_string(),
        Err(e) => return Json(rpc::failure(&id, &e)).into_response(),
    };
    let (a, t) = (app.clone(), tid.clone());
    match blocking(move || a.bridge.task(&t)).await {
        Ok(task) => open(app, id, tid, task),
        Err(e) => Json(rpc::failure(&id, &e)).into_response(),
    }
}

fn event(id: &Value, result: Value) -> Event {
    Event::default().data(rpc::success(id, result).to_string())
}

/// What a stream still has to send, and what it last reported.
struct Poller {
    app: Arc<App>,
    id: Value,
    tid: String,
    ctx: Value,
    last: String,
    queue: VecDeque<Event>,
    done: bool,
}

/// The event stream. It polls the store only while its body is being
/// read: when the client hangs up, the server drops the body and with it
/// this stream, so nothing polls for a reader that is gone (no task is
/// left running beside the connection).
fn open(app: Arc<App>, id: Value, tid: String, first: Value) -> Response {
    let last = first["status"]["state"].as_str().unwrap_or("").to_string();
    let done = tasks::is_terminal(&last);
    let ctx = first["contextId"].clone();
    let queue = VecDeque::from([event(&id, json!({"task": first}))]);
    let p = Poller { app, id, tid, ctx, last, queue, done };
    let events = futures_util::stream::unfold(p, |mut p| async move {
        let ev = p.next().await?;
        Some((Ok::<_, Infallible>(ev), p))
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response()
}

impl Poller {
    /// The next event: queued ones first, then the next change of state;
    /// `None` after a terminal state, an error, or when the server closes.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(ev) = self.queue.pop_front() {
                return Some(ev);
            }
            if self.done || self.app.closing() {
                return None;
            }
            tokio::time::sleep(POLL).await;
            tracing::trace!(task = %self.tid, "a2a stream poll");
            let (a, t) = (self.app.clone(), self.tid.clone());
            let task = match blocking(move || a.bridge.task(&t)).await {
                Ok(t) => t,
                Err(e) => {
                    self.done = true;
                    return Some(Event::default().event("error").data(rpc::failure(&self.id, &e).to_string()));
                }
            };
            let state = task["status"]["state"].as_str().unwrap_or("").to_string();
            if state == self.last {
                continue;
            }
            let (tid, ctx) = (&self.tid, &self.ctx);
            if let Some(art) = task.get("artifacts").and_then(|a| a.get(0)) {
                let up =
                    json!({"artifactUpdate": {"taskId": tid, "contextId": ctx, "artifact": art, "lastChunk": true}});
                self.queue.push_back(event(&self.id, up));
            }
            let up = json!({"statusUpdate": {"taskId": tid, "contextId": ctx, "status": task["status"], "metadata": task["metadata"]}});
            self.queue.push_back(event(&self.id, up));
            self.done = tasks::is_terminal(&state);
            self.last = state;
        }
    }
}
