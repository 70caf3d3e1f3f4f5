//! Fail-closed capability checks and their audit trail.

use super::load;
use super::Runner;
use crate::envelope::check_hid;
use crate::error::Error;
use crate::error::Result;
use crate::store::CapabilityAudit;
use serde_json::Value;

impl Runner {
    /// Fail-closed capability check, audited. The `dhp` domain is always
    /// allowed; anything else must be declared in `contract.capabilities`.
    pub fn require_capability(&self, hid: &str, fence: i64, domain: &str, resource: &str) -> Result<()> {
        check_hid(hid)?;
        let granted = self.write(|tx| {
            self.check_owner(tx, hid, fence)?;
            let granted = domain == "dhp" || {
                let env = load(tx, hid)?;
                env.pointer("/contract/capabilities")
                    .and_then(|c| c.get(domain))
                    .and_then(Value::as_array)
                    .is_some_and(|list| list.iter().any(|r| r.as_str() == Some(resource)))
            };
            let at = tx.now()?;
            tx.insert_capability_audit(
                hid,
                &CapabilityAudit { domain: domain.into(), resource: resource.into(), granted, at },
            )?;
            Ok(granted)
        })?;
        if granted {
            Ok(())
        } else {
            Err(Error::CapabilityDenied { hid: hid.to_string(), domain: domain.into(), resource: resource.into() })
        }
    }

    /// The capability audit trail of a handoff.
    pub fn capability_audit(&self, hid: &str) -> Result<Vec<CapabilityAudit>> {
        check_hid(hid)?;
        self.read(|tx| tx.capability_audit(hid))
    }
}
