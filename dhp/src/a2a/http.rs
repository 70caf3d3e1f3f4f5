//! The HTTP surface: the agent card (GET) and JSON-RPC (POST /). JSON-RPC
//! errors travel with HTTP 200, as `a2a-sdk`'s own server sends them; only
//! requests refused before they are read are HTTP errors: a foreign Host or
//! Origin (403), a missing or wrong bearer token (401), a body that is not
//! `application/json` (415).

use super::rpc::{self, RpcError};
use super::{card, guard, stream, tasks, App};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a blocking send or a stream looks at the store.
pub const POLL: Duration = Duration::from_millis(200);

pub fn router(app: Arc<App>) -> Router {
    Router::new().route("/.well-known/agent-card.json", get(agent_card)).route("/", post(json_rpc)).with_state(app)
}

async fn agent_card(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(r) = app.guard.check(&headers) {
        return r;
    }
    Json(card::agent_card(&app.url, app.token.is_some())).into_response()
}

/// Run blocking store code off the async workers.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RpcError> + Send + 'static,
) -> Result<T, RpcError> {
    tokio::task::spawn_blocking(f).await.map_err(RpcError::internal)?
}

fn authorized(app: &App, headers: &HeaderMap) -> bool {
    use subtle::ConstantTimeEq;
    let Some(want) = &app.token else { return true };
    let got = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    got.is_some_and(|g| bool::from(g.as_bytes().ct_eq(want.as_bytes())))
}

/// `A2A-Version`: absent (curl, older clients) or 1.0.x is served.
fn version_ok(headers: &HeaderMap) -> Result<(), RpcError> {
    match headers.get("A2A-Version").map(|v| v.to_str().unwrap_or("?").trim()) {
        None | Some("") => Ok(()),
        Some(v) if v == card::PROTOCOL_VERSION || v.starts_with("1.0.") => Ok(()),
        Some(v) => Err(RpcError::new(
            rpc::VERSION_NOT_SUPPORTED,
            format!(
                "Version not supported: A2A-Version {:?} (this server speaks {})",
                v.chars().take(32).collect::<String>(),
                card::PROTOCOL_VERSION
            ),
        )),
    }
}

fn reply(body: Value) -> Response {
    Json(body).into_response()
}

async fn json_rpc(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    if let Some(r) = app.guard.check(&headers) {
        return r;
    }
    if !authorized(&app, &headers) {
        let e = RpcError::new(
            rpc::INVALID_REQUEST,
            "Unauthorized: a valid 'Authorization: Bearer <token>' header is required",
        );
        let mut r = reply(rpc::failure(&Value::Null, &e));
        *r.status_mut() = StatusCode::UNAUTHORIZED;
        r.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        return r;
    }
    if let Some(r) = guard::check_content_type(&headers) {
        return r;
    }
    let bytes = match axum::body::to_bytes(body, app.max_body).await {
        Ok(b) => b,
        Err(_) => {
            let e = RpcError::new(rpc::INVALID_REQUEST, format!("Payload too large (limit {} bytes)", app.max_body));
            return reply(rpc::failure(&Value::Null, &e));
        }
    };
    let req = match rpc::parse_request(&bytes) {
        Ok(r) => r,
        Err((id, e)) => return reply(rpc::failure(&id, &e)),
    };
    if let Err(e) = version_ok(&headers) {
        return reply(rpc::failure(&req.id, &e));
    }
    let id = req.id.clone();
    let result = match req.method.as_str() {
        "SendMessage" => send_message(&app, req.params).await,
        "GetTask" => get_task(&app, req.params).await,
        "CancelTask" => cancel_task(&app, req.params).await,
        "ListTasks" => list_tasks(&app).await,
        "SendStreamingMessage" => return stream::send_streaming(app, id, req.params).await,
        "SubscribeToTask" => return stream::subscribe(app, id, req.params).await,
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => {
            Err(RpcError::new(rpc::PUSH_NOT_SUPPORTED, "Push Notification is not supported"))
        }
        "GetExtendedAgentCard" => Err(RpcError::new(-32007, "Authenticated Extended Card is not configured")),
        other => Err(RpcError::new(
            rpc::METHOD_NOT_FOUND,
            format!("Method not found: {:?}", other.chars().take(64).collect::<String>()),
        )),
    };
    match result {
        Ok(v) => reply(rpc::success(&id, v)),
        Err(e) => reply(rpc::failure(&id, &e)),
    }
}

/// Read `params.message`, refuse follow-ups to existing tasks, dispatch.
/// Returns the new task id and its Task JSON (state SUBMITTED).
pub async fn create_task(app: &Arc<App>, params: &Value) -> Result<(String, Value), RpcError> {
    let msg = params
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| RpcError::params("params.message is required"))?;
    if let Some(tid) = msg.get("taskId").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        let (a, tid) = (app.clone(), tid.to_string());
        blocking(move || a.bridge.handoff_of(&tid)).await?;
        return Err(RpcError::new(
            rpc::UNSUPPORTED_OPERATION,
            "a task takes one message: follow-up messages to an existing task are not supported",
        ));
    }
    let sub = super::submit::Submission::from_message(msg)?;
    let a = app.clone();
    blocking(move || {
        let (tid, _) = a.bridge.submit(&sub)?;
        let mut task = a.bridge.task(&tid)?;
        // The Task this request made is SUBMITTED, even when a pool worker
        // claimed it before it was read back (a loaded machine: the first
        // streamed event read WORKING once); a stream then reports WORKING
        // as its next change. A handoff already ended keeps its state.
        let st = &task["metadata"]["dhp_status"];
        if st == dhp_core::Status::Pending.as_str() || st == dhp_core::Status::Running.as_str() {
            task["status"]["state"] = json!(tasks::SUBMITTED);
        }
        Ok((tid, task))
    })
    .await
}

async fn send_message(app: &Arc<App>, params: Value) -> Result<Value, RpcError> {
    let (tid, task) = create_task(app, &params).await?;
    let immediate = params.pointer("/configuration/returnImmediately").and_then(Value::as_bool).unwrap_or(false);
    if immediate {
        return Ok(json!({"task": task}));
    }
    // Blocking form: wait for a terminal state, at most --block-timeout.
    let deadline = Instant::now() + app.block_timeout;
    loop {
        let (a, t) = (app.clone(), tid.clone());
        let task = blocking(move || a.bridge.task(&t)).await?;
        let state = task["status"]["state"].as_str().unwrap_or("");
        if tasks::is_terminal(state) || Instant::now() >= deadline || app.closing() {
            return Ok(json!({"task": task}));
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn get_task(app: &Arc<App>, params: Value) -> Result<Value, RpcError> {
    let tid = rpc::str_param(&params, "id")?.to_string();
    let a = app.clone();
    blocking(move || a.bridge.task(&tid)).await
}

async fn cancel_task(app: &Arc<App>, params: Value) -> Result<Value, RpcError> {
    let tid = rpc::str_param(&params, "id")?.to_string();
    let a = app.clone();
    blocking(move || a.bridge.cancel(&tid)).await
}

async fn list_tasks(app: &Arc<App>) -> Result<Value, RpcError> {
    let a = app.clone();
    let tasks = blocking(move || a.bridge.all_tasks()).await?;
    let n = tasks.len();
    Ok(json!({"tasks": tasks, "nextPageToken": "", "pageSize": n, "totalSize": n}))
}
