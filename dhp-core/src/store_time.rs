//! [`StoreTime`]: a time as the stores keep it.

use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

/// A time on the store's clock: seconds since the Unix epoch, as the
/// stores keep them (`REAL` in SQLite, `double precision` in PostgreSQL)
/// and as the reference writes them. Serialized as the same number, so
/// every stored or shipped value stays byte-identical; the type only says
/// which numbers are instants (leases, leadership, stall and approval
/// clocks) and which are spans in seconds.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct StoreTime(f64);

impl StoreTime {
    /// The epoch itself (what a missing clock reads as).
    pub const EPOCH: StoreTime = StoreTime(0.0);

    /// The time `secs` seconds after the Unix epoch.
    pub const fn from_secs(secs: f64) -> Self {
        StoreTime(secs)
    }

    /// Seconds since the Unix epoch.
    pub const fn secs(self) -> f64 {
        self.0
    }

    /// The local wall clock (the store clock of a file or memory store).
    pub fn now_local() -> Self {
        StoreTime(crate::envelope::now())
    }

    /// The later of two times.
    #[must_use]
    pub fn max(self, other: StoreTime) -> StoreTime {
        StoreTime(self.0.max(other.0))
    }

    /// The earlier of two times.
    #[must_use]
    pub fn min(self, other: StoreTime) -> StoreTime {
        StoreTime(self.0.min(other.0))
    }
}

impl Add<f64> for StoreTime {
    type Output = StoreTime;
    fn add(self, secs: f64) -> StoreTime {
        StoreTime(self.0 + secs)
    }
}

impl Add<Duration> for StoreTime {
    type Output = StoreTime;
    fn add(self, d: Duration) -> StoreTime {
        StoreTime(self.0 + d.as_secs_f64())
    }
}

impl AddAssign<f64> for StoreTime {
    fn add_assign(&mut self, secs: f64) {
        self.0 += secs;
    }
}

impl Sub<f64> for StoreTime {
    type Output = StoreTime;
    fn sub(self, secs: f64) -> StoreTime {
        StoreTime(self.0 - secs)
    }
}

impl Sub<Duration> for StoreTime {
    type Output = StoreTime;
    fn sub(self, d: Duration) -> StoreTime {
        StoreTime(self.0 - d.as_secs_f64())
    }
}

impl SubAssign<f64> for StoreTime {
    fn sub_assign(&mut self, secs: f64) {
        self.0 -= secs;
    }
}

/// The span between two times, in seconds (negative when `rhs` is later).
impl Sub for StoreTime {
    type Output = f64;
    fn sub(self, rhs: StoreTime) -> f64 {
        self.0 - rhs.0
    }
}

impl From<f64> for StoreTime {
    fn from(secs: f64) -> Self {
        StoreTime(secs)
    }
}

impl From<StoreTime> for f64 {
    fn from(t: StoreTime) -> f64 {
        t.0
    }
}

impl std::fmt::Display for StoreTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_is_the_bare_number() {
        for secs in [0.0, 1_733_462_400.123_456_7, -1.5, 1e-7, 4_102_444_800.0] {
            let t = StoreTime::from_secs(secs);
            let typed = serde_json::to_string(&t).unwrap();
            assert_eq!(typed, serde_json::to_string(&secs).unwrap());
            let back: StoreTime = serde_json::from_str(&typed).unwrap();
            assert_eq!(back.secs().to_bits(), secs.to_bits());
        }
        let v = serde_json::json!({"at": StoreTime::from_secs(12.5)});
        assert_eq!(v.to_string(), r#"{"at":12.5}"#);
    }

    #[test]
    fn arithmetic_in_seconds() {
        let t = StoreTime::from_secs(100.0);
        assert_eq!(t + 2.5, StoreTime::from_secs(102.5));
        assert_eq!(t - 2.5, StoreTime::from_secs(97.5));
        assert_eq!(t + Duration::from_millis(1500), StoreTime::from_secs(101.5));
        assert_eq!(t - Duration::from_millis(1500), StoreTime::from_secs(98.5));
        assert_eq!(StoreTime::from_secs(103.0) - t, 3.0);
        assert_eq!(t - StoreTime::from_secs(103.0), -3.0);
        let mut u = t;
        u += 1.0;
        u -= 0.25;
        assert_eq!(u.secs(), 100.75);
        assert_eq!(t.partial_cmp(&u), Some(std::cmp::Ordering::Less));
        assert!(u > t);
        assert_eq!(t.max(u), u);
        assert_eq!(t.min(u), t);
        assert_eq!(StoreTime::from_secs(1.5).to_string(), 1.5f64.to_string());
        assert_eq!(f64::from(StoreTime::from(7.0)), 7.0);
    }
}
