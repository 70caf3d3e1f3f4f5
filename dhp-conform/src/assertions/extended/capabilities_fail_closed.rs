//! The `capabilities-fail-closed` assertion.

use crate::assertions::{new_handoff, new_handoff_with, spec_with};
use crate::check::Check;
use crate::ensure_eq;
use crate::ops::Token;
use crate::suite::Ctx;
use serde_json::json;

/// Capabilities fail closed: only what the contract declares (and the
/// `dhp` domain) is granted, every check audited.
pub fn capabilities_fail_closed(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let caps = json!({"network": ["api.example.com"], "filesystem": ["/tmp/work"]});
    let h1 = new_handoff_with(&mut m, &root, spec_with(1, json!({"capabilities": caps})))?;
    let h2 = new_handoff(&mut m, &root, 2)?;
    let t1 = m.claim(&root, "w1", &h1)?;
    let t2 = m.claim(&root, "w1", &h2)?;
    let checks: [(&Token, &str, &str, bool); 7] = [
        (&t1, "network", "api.example.com", true),
        (&t1, "network", "evil.example.com", false),
        (&t1, "filesystem", "/etc", false),
        (&t1, "secrets", "aws", false),
        (&t1, "dhp", "checkpoint", true),
        (&t2, "network", "api.example.com", false),
        (&t2, "dhp", "checkpoint", true),
    ];
    for (t, domain, resource, granted) in checks {
        let mut args = t.with("domain", json!(domain));
        args["resource"] = json!(resource);
        let what = format!(
            "require_capability {domain}:{resource} ({} capabilities)",
            if t.hid == h1 { "declared" } else { "no" }
        );
        if granted {
            m.op("require_capability", args).map_err(|f| f.context(&what))?;
        } else {
            m.must_fail("require_capability", args, &["CapabilityDenied"], &what)?;
        }
    }
    if let Some(db) = cx.store(&root)? {
        let want1: Vec<(String, String, bool)> =
            checks[..5].iter().map(|(_, d, r, g)| (d.to_string(), r.to_string(), *g)).collect();
        let want2: Vec<(String, String, bool)> =
            checks[5..].iter().map(|(_, d, r, g)| (d.to_string(), r.to_string(), *g)).collect();
        ensure_eq!(db.capability_audit(&h1)?, want1, "capability_audit rows of the handoff with capabilities");
        ensure_eq!(db.capability_audit(&h2)?, want2, "capability_audit rows of the handoff without");
    }
    Ok(())
}
