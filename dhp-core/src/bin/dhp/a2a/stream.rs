//! The streaming methods (`SendStreamingMessage`, `SubscribeToTask`):
//! server-sent events, each a JSON-RPC response whose result is a
//! `StreamResponse`. The first event is the Task; then a status update for
//! every change of A2A state seen in the store (polled), the result
//! artifact before COMPLETED, and the stream ends at a terminal state.

use super::http::{blocking, create_task, POLL};
use super::rpc;
use super::{tasks, App};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Json, Response};
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Events buffered for a slow reader before the poller waits for it.
const BUFFER: usize = 16;

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

/// Start the poller and return the event stream.
fn open(app: Arc<App>, id: Value, tid: String, first: Value) -> Response {
    let (tx, rx) = mpsc::channel::<Event>(BUFFER);
    tokio::spawn(poll(app, id, tid, first, tx));
    let events =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx)) });
    Sse::new(events).keep_alive(KeepAlive::default()).into_response()
}

/// Send the Task, then every state change; stop at a terminal state, when
/// the reader hangs up (a send fails) or when the server is closing.
async fn poll(app: Arc<App>, id: Value, tid: String, first: Value, tx: mpsc::Sender<Event>) {
    let ctx = first["contextId"].clone();
    let mut last = first["status"]["state"].as_str().unwrap_or("").to_string();
    if tx.send(event(&id, json!({"task": first}))).await.is_err() || tasks::is_terminal(&last) {
        return;
    }
    while !app.closing() {
        tokio::time::sleep(POLL).await;
        let (a, t) = (app.clone(), tid.clone());
        let task = match blocking(move || a.bridge.task(&t)).await {
            Ok(t) => t,
            Err(e) => {
                let _ = tx.send(Event::default().event("error").data(rpc::failure(&id, &e).to_string())).await;
                return;
            }
        };
        let state = task["status"]["state"].as_str().unwrap_or("").to_string();
        if state == last {
            continue;
        }
        if let Some(art) = task.get("artifacts").and_then(|a| a.get(0)) {
            let up = json!({"artifactUpdate": {"taskId": tid, "contextId": ctx, "artifact": art, "lastChunk": true}});
            if tx.send(event(&id, up)).await.is_err() {
                return;
            }
        }
        let up = json!({"statusUpdate": {"taskId": tid, "contextId": ctx, "status": task["status"], "metadata": task["metadata"]}});
        if tx.send(event(&id, up)).await.is_err() || tasks::is_terminal(&state) {
            return;
        }
        last = state;
    }
}
