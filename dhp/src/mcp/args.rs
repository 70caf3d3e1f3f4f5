//! Typed access to a tool call's `arguments` object. Every failure is a
//! ValidationError naming the parameter, raised before the store is touched.

use dhp_core::{envelope, json, Config, Error};
use serde_json::{Map, Value};

/// A tool call's arguments.
pub struct Args<'a> {
    map: &'a Map<String, Value>,
}

fn bad(msg: String) -> Error {
    Error::validation(msg)
}

impl<'a> Args<'a> {
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Args { map }
    }

    fn get(&self, name: &str) -> Result<&'a Value, Error> {
        self.map.get(name).ok_or_else(|| bad(format!("missing required argument `{name}`")))
    }

    /// A string argument.
    pub fn string(&self, name: &str) -> Result<&'a str, Error> {
        self.get(name)?.as_str().ok_or_else(|| bad(format!("argument `{name}` must be a string")))
    }

    /// A string argument no longer than `limit` bytes (an id-like label).
    pub fn label(&self, name: &'static str, limit: usize) -> Result<&'a str, Error> {
        let s = self.string(name)?;
        if s.len() > limit {
            return Err(Error::Oversize { what: name, size: s.len(), limit });
        }
        Ok(s)
    }

    /// A JSON object argument of at most `limit` bytes as the reference
    /// measures it (`json.dumps(x, sort_keys=True)`).
    pub fn object(&self, name: &'static str, limit: usize) -> Result<&'a Value, Error> {
        let v = self.get(name)?;
        if !v.is_object() {
            return Err(bad(format!("argument `{name}` must be a JSON object")));
        }
        let size = json::dumps_sorted(v)?.len();
        if size > limit {
            return Err(Error::Oversize { what: name, size, limit });
        }
        Ok(v)
    }

    /// A finite JSON number.
    pub fn number(&self, name: &str) -> Result<f64, Error> {
        let v = self.get(name)?;
        match v.as_f64() {
            Some(f) if v.is_number() && f.is_finite() => Ok(f),
            _ => Err(bad(format!("argument `{name}` must be a finite number"))),
        }
    }

    /// `handoff_id`, well formed.
    pub fn hid(&self) -> Result<&'a str, Error> {
        envelope::check_hid(self.string("handoff_id")?)
    }

    /// `worker_id`, well formed.
    pub fn worker(&self) -> Result<&'a str, Error> {
        envelope::check_worker_id(self.string("worker_id")?)
    }
}

/// The byte limit for free-form labels (step ids, digests, capability
/// names): the checkpoint limit, so no single argument outweighs a state.
pub fn label_limit(cfg: &Config) -> usize {
    cfg.max_checkpoint_bytes
}
