//! [`HandoffId`] and [`WorkerId`]: ids validated once, where they enter
//! the API.

use crate::envelope::{check_hid, check_worker_id};
use crate::error::Result;
use std::fmt;

/// A handoff id: 64 lowercase hex characters (the sha256 of the spec),
/// checked when made. Stored and shipped as the same text.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HandoffId(String);

impl HandoffId {
    /// Check `hid` and keep it.
    pub fn parse(hid: &str) -> Result<Self> {
        check_hid(hid)?;
        Ok(HandoffId(hid.to_string()))
    }

    /// The full id.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 12 characters, as logs show an id.
    pub fn short(&self) -> &str {
        short(&self.0)
    }
}

/// The first 12 characters of an id (all of a shorter text), as logs
/// show it.
pub fn short(hid: &str) -> &str {
    hid.get(..12).unwrap_or(hid)
}

impl serde::Serialize for HandoffId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl fmt::Display for HandoffId {
    /// The full id; `{:#}` shows the short form of [`HandoffId::short`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if f.alternate() { self.short() } else { &self.0 })
    }
}

impl fmt::Debug for HandoffId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HandoffId({})", self.short())
    }
}

impl AsRef<str> for HandoffId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for HandoffId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for HandoffId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for HandoffId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl From<HandoffId> for String {
    fn from(h: HandoffId) -> String {
        h.0
    }
}

impl From<&HandoffId> for String {
    fn from(h: &HandoffId) -> String {
        h.0.clone()
    }
}

/// A worker's (or supervisor's) id: 1–128 characters of `[A-Za-z0-9_.-]`,
/// not reserved (`__name__`, only dots: docs/PROTOCOL.md §1.2), checked
/// when made. What a runner writes as an ownership row's `holder` and
/// names its liveness token by; rows read back keep their holder as text,
/// since the tombstone and ids the reference accepts are not `WorkerId`s.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkerId(String);

impl WorkerId {
    /// Check `id` and keep it.
    pub fn parse(id: &str) -> Result<Self> {
        check_worker_id(id)?;
        Ok(WorkerId(id.to_string()))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl serde::Serialize for WorkerId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WorkerId({})", self.0)
    }
}

impl AsRef<str> for WorkerId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for WorkerId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for WorkerId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// A stored holder against a worker: the same text.
impl PartialEq<WorkerId> for String {
    fn eq(&self, other: &WorkerId) -> bool {
        *self == other.0
    }
}

impl PartialEq<&WorkerId> for String {
    fn eq(&self, other: &&WorkerId) -> bool {
        *self == other.0
    }
}

impl From<&WorkerId> for String {
    fn from(w: &WorkerId) -> String {
        w.0.clone()
    }
}

/// What the runner accepts as a handoff id: text, checked on the way in,
/// or a [`HandoffId`], already checked.
pub trait ToHandoffId {
    /// The checked id (a `ValidationError` for malformed text).
    fn to_handoff_id(&self) -> Result<HandoffId>;
}

impl ToHandoffId for str {
    fn to_handoff_id(&self) -> Result<HandoffId> {
        HandoffId::parse(self)
    }
}

impl ToHandoffId for String {
    fn to_handoff_id(&self) -> Result<HandoffId> {
        HandoffId::parse(self)
    }
}

impl ToHandoffId for HandoffId {
    fn to_handoff_id(&self) -> Result<HandoffId> {
        Ok(self.clone())
    }
}

impl<T: ToHandoffId + ?Sized> ToHandoffId for &T {
    fn to_handoff_id(&self) -> Result<HandoffId> {
        (**self).to_handoff_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn parsed_once_shown_short_on_request() {
        let text = "ab".repeat(32);
        let h = HandoffId::parse(&text).unwrap();
        assert_eq!(h.as_str(), text);
        assert_eq!(h.to_string(), text, "Display is the stored text");
        assert_eq!(format!("{h:#}"), &text[..12]);
        assert_eq!(h.short(), &text[..12]);
        assert_eq!(short("abc"), "abc");
        assert_eq!(serde_json::json!({"hid": h}), serde_json::json!({"hid": text}));
        assert_eq!(text.to_handoff_id().unwrap(), h);
        for bad in ["", "AB".repeat(32).as_str(), &text[..63], "../etc/passwd"] {
            assert!(matches!(HandoffId::parse(bad), Err(Error::MalformedId { .. })), "{bad:?}");
        }
    }

    #[test]
    fn worker_ids_are_checked_once_and_compare_as_their_text() {
        let w = WorkerId::parse("w-1.x_2").unwrap();
        assert_eq!((w.as_str(), w.to_string()), ("w-1.x_2", "w-1.x_2".to_string()));
        assert_eq!(serde_json::json!({"holder": w}), serde_json::json!({"holder": "w-1.x_2"}));
        let (same, other) = ("w-1.x_2".to_string(), "w".to_string());
        let by_ref: &WorkerId = &w;
        assert!(same == w && same == by_ref && w == "w-1.x_2" && other != w);
        for bad in ["", "a b", "w1\n", "__orphaned__", "__x__", "..", &"a".repeat(129)] {
            assert!(matches!(WorkerId::parse(bad), Err(Error::MalformedId { .. })), "{bad:?}");
        }
        for fine in ["__w", "w__", ".w", "a..b", &"a".repeat(128)] {
            assert!(WorkerId::parse(fine).is_ok(), "{fine:?}");
        }
    }
}
