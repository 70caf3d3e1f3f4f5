//! Suspend and resume: the portable bundle.

use super::reads::materialize;
use super::{checked_state, envelope_text, exec_mut, load, save, state_err, Runner};
use crate::config::Config;
use crate::envelope;
use crate::error::{Error, Result};
use crate::id::ToHandoffId;
use crate::json;
use crate::status::{Op, Status};
use crate::store::{CheckpointRow, Tx};
use serde_json::{json, Value};
use std::path::Path;

impl Runner {
    /// Suspend a running handoff and return its portable bundle: canonical
    /// bytes of `{"dhp_bundle": "1.0", "envelope", "checkpoints"}`. The
    /// status change is committed before this returns: a caller that then
    /// fails to keep the bytes has a suspended handoff and no bundle, so
    /// prefer [`Runner::suspend_to`].
    pub fn suspend(&self, hid: &(impl ToHandoffId + ?Sized)) -> Result<Vec<u8>> {
        let hid = hid.to_handoff_id()?;
        let hid = hid.as_str();
        self.write(|tx| suspend_in(tx, &self.cfg, hid))
    }

    /// Suspend into the file `out`. The bundle is written to a temporary
    /// file beside `out`, fsynced and renamed over `out` inside the write
    /// transaction, before the status change commits; if any of that
    /// fails the transaction rolls back (the handoff stays as it was) and
    /// no file is left behind. Returns the bundle's size in bytes.
    pub fn suspend_to(&self, hid: &(impl ToHandoffId + ?Sized), out: &Path) -> Result<usize> {
        let hid = hid.to_handoff_id()?;
        let hid = hid.as_str();
        let mut placed = false;
        let res = self.write(|tx| {
            let blob = suspend_in(tx, &self.cfg, hid)?;
            write_file_atomic(out, &blob)?;
            placed = true;
            Ok(blob.len())
        });
        if res.is_err() && placed {
            // The commit failed after the file was placed: take it back.
            let _ = std::fs::remove_file(out);
        }
        res
    }

    /// Import a bundle onto this store. The handoff arrives pending with
    /// attempt+1 and its checkpoints; a tampered bundle changes nothing.
    pub fn resume(&self, bundle: &[u8]) -> Result<String> {
        if bundle.len() > self.cfg.max_envelope_bytes {
            return Err(Error::Oversize { what: "bundle", size: bundle.len(), limit: self.cfg.max_envelope_bytes });
        }
        let data = json::parse_bytes(bundle)?;
        match data.get("dhp_bundle").and_then(Value::as_str) {
            Some("0.3") | Some("1.0") => {}
            Some(other) => return Err(Error::validation(format!("unknown bundle version {other}"))),
            None => return Err(Error::validation("not a DHP bundle: no \"dhp_bundle\" version field")),
        }
        let mut env = data.get("envelope").cloned().ok_or_else(|| Error::validation("bundle has no envelope"))?;
        // Identity and input binding: an envelope whose inputs were swapped
        // and whose id was recomputed is refused here as at dispatch (the
        // reference checks only the id).
        let hid = envelope::verify(&env).map_err(|e| match e {
            e @ Error::Tamper { .. } => e.tamper_within("bundle envelope"),
            other => other,
        })?;
        let items = match data.get("checkpoints") {
            None => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(_) => return Err(Error::validation("bundle checkpoints must be a list")),
        };
        let mut rows = Vec::with_capacity(items.len());
        let at = self.cfg.clock.now_iso();
        for item in &items {
            let seq = item.get("seq").and_then(Value::as_i64).filter(|s| *s >= 0);
            let (Some(seq), Some(state)) = (seq, item.get("state")) else {
                return Err(Error::validation("bundle checkpoint needs a non-negative seq and a state"));
            };
            let (text, hash) = checked_state(state, &self.cfg)?;
            if let Some(claimed) = item.get("state_hash") {
                if claimed.as_str() != Some(hash.as_str()) {
                    return Err(Error::tamper(format!("bundle checkpoint {seq}: state hash mismatch")));
                }
            }
            rows.push(CheckpointRow { seq, state_json: text, state_hash: hash, at: at.clone() });
        }
        let ex = exec_mut(&mut env)?;
        let attempt = ex.get("attempt").and_then(Value::as_i64).unwrap_or(0);
        ex.insert("status".into(), json!(Status::Pending.as_str()));
        ex.insert("attempt".into(), json!(attempt + 1));
        let text = envelope_text(&env, &self.cfg)?;
        self.write(|tx| {
            if !tx.insert_envelope(&hid, &text, self.cfg.clock.store_time())? {
                return Err(state_err(&hid, "resume", "handoff already exists here"));
            }
            for r in &rows {
                tx.insert_checkpoint(&hid, r)?;
            }
            Ok(())
        })?;
        Ok(hid)
    }
}

/// Inside a write transaction: status suspended and the bundle bytes.
fn suspend_in(tx: &mut dyn Tx, cfg: &Config, hid: &str) -> Result<Vec<u8>> {
    let mut env = load(tx, hid)?;
    let Some(next) = Status::of(&env).and_then(|s| s.after(Op::Suspend)) else {
        let st = envelope::status(&env);
        return Err(state_err(hid, "suspend", format!("not active (status={st})")));
    };
    exec_mut(&mut env)?.insert("status".into(), json!(next.as_str()));
    save(tx, hid, &env, cfg)?;
    let rows = materialize(tx, hid, &mut env)?;
    let cps: Vec<Value> = rows
        .iter()
        .map(|r| Ok(json!({"seq": r.seq, "state": crate::store::deep::parse(&r.state_json)?})))
        .collect::<Result<_>>()?;
    let blob = json::canonical(&json!({"dhp_bundle": "1.0", "envelope": env, "checkpoints": cps}))?;
    if blob.len() > cfg.max_envelope_bytes {
        return Err(Error::Oversize { what: "bundle", size: blob.len(), limit: cfg.max_envelope_bytes });
    }
    Ok(blob)
}

/// Write `data` to `path` all or nothing: a temporary file in the same
/// directory, fsynced, renamed over `path`, and the directory fsynced. On
/// failure the temporary file is removed and `path` is untouched.
fn write_file_atomic(path: &Path, data: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name =
        path.file_name().ok_or_else(|| Error::validation(format!("bundle path {} names no file", path.display())))?;
    let tmp =
        dir.join(format!(".{}.tmp-{}-{:016x}", name.to_string_lossy(), std::process::id(), rand::random::<u64>()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    // The rename is durable once the directory is; a failure here leaves
    // the complete file in place, so it is not an error worth a rollback.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
