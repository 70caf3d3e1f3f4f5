//! The MCP side: tool listing, argument decoding, reply encoding, stdio.

use super::args::Args;
use super::{calls, tools};
use dhp_core::TransportKind;
use dhp_core::{json, Error, Runner};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The server: one store, one session (stdio has one client).
#[derive(Clone)]
pub struct DhpServer {
    runner: Runner,
    session: Arc<calls::Session>,
}

/// The reference's reply text: `json.dumps({"ok": ..., ...})`.
fn encode(v: &Value) -> String {
    // json::dumps fails only on non-finite numbers, which no reply holds.
    json::dumps(v).unwrap_or_else(|e| format!("{{\"ok\": false, \"error\": \"{e}\", \"code\": \"InternalError\"}}"))
}

fn failure(e: &Error) -> Value {
    json!({"ok": false, "error": message(e), "code": e.kind()})
}

/// The error text an agent reads. A caller that holds no lease at all
/// presented no fence (calls::fence_of uses -1): say so in the reference's
/// words instead of printing the sentinel.
fn message(e: &Error) -> String {
    match e {
        Error::StaleFence { hid, holder, presented, .. } if presented.get() == -1 => {
            format!("{holder} does not hold {}", hid.get(..12).unwrap_or(hid))
        }
        e => e.to_string(),
    }
}

/// One JSON text, mirrored in structuredContent as `{"result": text}` to
/// satisfy the tool's outputSchema, as the reference's server does. Every
/// failure (bad arguments included) is an ordinary `{"ok": false}` reply;
/// only an unknown tool is an MCP-level error.
fn tool_result(reply: &Value) -> CallToolResult {
    let text = encode(reply);
    let mut r = CallToolResult::success(vec![ContentBlock::text(text.clone())]);
    r.structured_content = Some(json!({ "result": text }));
    r
}

fn to_tool(t: &tools::ToolDef) -> Tool {
    Tool::new(t.name, t.doc, Arc::new(tools::input_schema(t))).with_raw_output_schema(Arc::new(tools::output_schema(t)))
}

/// Run one call to completion on a blocking thread (SQLite blocks).
async fn run_call(
    runner: Runner,
    session: Arc<calls::Session>,
    name: String,
    args: Map<String, Value>,
) -> CallToolResult {
    let joined = tokio::task::spawn_blocking(move || {
        let a = Args::new(&args);
        match calls::call(&runner, &session, &name, &a) {
            // The reference's exact answer: plain text, isError.
            None => CallToolResult::error(vec![ContentBlock::text(format!("Unknown tool: {name}"))]),
            Some(Ok(mut m)) => {
                let mut v = Map::new();
                v.insert("ok".into(), json!(true));
                v.append(&mut m);
                tool_result(&Value::Object(v))
            }
            // Bad arguments included: one reply shape for every failure.
            Some(Err(e)) => tool_result(&failure(&e)),
        }
    })
    .await;
    joined.unwrap_or_else(|e| {
        tracing::error!("mcp tool call failed: {e}");
        tool_result(&json!({"ok": false, "error": "internal error", "code": "InternalError"}))
    })
}

impl ServerHandler for DhpServer {
    fn get_info(&self) -> ServerConfig {
        let instructions = match self.session.role {
            tools::Role::Agent => {
                "Durable Handoff Protocol: dhp_dispatch work, dhp_claim it under a lease, dhp_checkpoint \
                 progress, dhp_heartbeat while thinking, dhp_complete with a result; after a worker dies, \
                 dhp_recover resumes from the last checkpoint. Only this session may act under the worker ids \
                 it claimed or recovered with. Approval requests are decided elsewhere, never by you. Every \
                 tool answers one JSON text: {\"ok\": true, ...} or {\"ok\": false, \"error\", \"code\"}."
            }
            tools::Role::Decider => {
                "Durable Handoff Protocol, decider side: read an approval request with dhp_approval_status \
                 and the handoff with dhp_status, then dhp_approve or dhp_deny it (final). Every tool answers \
                 one JSON text: {\"ok\": true, ...} or {\"ok\": false, \"error\", \"code\"}."
            }
        };
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("dhp", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::offered(self.session.role).map(to_tool).collect()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::find(self.session.role, name).map(to_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        Ok(run_call(self.runner.clone(), self.session.clone(), request.name.to_string(), args).await.into())
    }
}

/// Serve on stdin/stdout until the client goes away. Lines reach the SDK
/// through [`super::stdio`], which answers the ones it would ignore.
pub async fn serve(runner: Runner, role: tools::Role) -> Result<(), Error> {
    let (pipes, framing) = super::stdio::start();
    let server = DhpServer { runner, session: Arc::new(calls::Session::new(role)) };
    let served = async {
        let service = server
            .serve(pipes)
            .await
            .map_err(|e| Error::transport_from(TransportKind::Start, format!("mcp: session did not start: {e}"), e))?;
        service.waiting().await.map_err(|e| {
            Error::transport_from(TransportKind::Server, format!("mcp: session ended abnormally: {e}"), e)
        })?;
        Ok::<(), Error>(())
    }
    .await;
    // The SDK's side of the pipes is closed now; what it wrote is flushed.
    framing.finish().await;
    served
}
