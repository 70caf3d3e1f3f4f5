//! Fail-closed capability checks and their audit trail.

use super::{load, Runner};
use crate::error::{Error, Result};
use crate::id::ToHandoffId;
use crate::lease::Lease;
use crate::store::CapabilityAudit;
use serde_json::Value;

impl Runner {
    /// Fail-closed capability check, audited. The `dhp` domain is always
    /// allowed; anything else must be declared in `contract.capabilities`.
    pub fn require_capability(&self, lease: &Lease, domain: &str, resource: &str) -> Result<()> {
        let hid = lease.hid().as_str();
        let granted = self.write_owned(lease, |tx| {
            let granted = domain == "dhp" || {
                let env = load(tx, hid)?;
                env.pointer("/contract/capabilities")
                    .and_then(|c| c.get(domain))
                    .and_then(Value::as_array)
                    .is_some_and(|list| list.iter().any(|r| r.as_str() == Some(resource)))
            };
            let at = self.now_in(tx)?.secs();
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
    pub fn capability_audit(&self, hid: &(impl ToHandoffId + ?Sized)) -> Result<Vec<CapabilityAudit>> {
        let hid = hid.to_handoff_id()?;
        self.read(|tx| tx.capability_audit(hid.as_str()))
    }
}
