//! The agent card served at `/.well-known/agent-card.json` (A2A 1.0,
//! protobuf JSON of `a2a.v1.AgentCard`).

use serde_json::{json, Value};

/// The A2A protocol version this server speaks (`A2A-Version`).
pub const PROTOCOL_VERSION: &str = "1.0";

/// The card; `url` is the JSON-RPC endpoint clients should call.
pub fn agent_card(url: &str, bearer: bool) -> Value {
    let mut card = json!({
        "name": "dhp-rs A2A bridge",
        "description": "Durable A2A tasks: each task is a DHP handoff, so a worker's death is \
                        recovered underneath and never surfaces as a failed task.",
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION}],
        "capabilities": {"streaming": true, "pushNotifications": false},
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": ["application/json", "text/plain"],
        "skills": [{
            "id": "dhp.handoff",
            "name": "Durable handoff",
            "description": "Run a DHP task {kind, inputs, output_schema, budget}; the default kind is \
                            prime.census with inputs {lo, hi, chunk}.",
            "tags": ["dhp", "durable", "prime.census"],
            "examples": ["{\"inputs\": {\"lo\": 0, \"hi\": 100000, \"chunk\": 10000}}"],
        }],
    });
    if bearer {
        card["securitySchemes"] = json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}});
        card["securityRequirements"] = json!([{"schemes": {"bearer": {"list": []}}}]);
    }
    card
}
