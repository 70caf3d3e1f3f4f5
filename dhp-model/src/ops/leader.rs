use super::OpError;
use crate::state::{Leadership, State, Time};

/// §7.1 Acquire: when the row is absent or its term expired
/// (`expires_at < now`); a leader asking again while its term is live
/// stays leader with a new term. `expires_at := now + ttl`.
/// [leader-election] [leader-renews-term]
pub fn leader_acquire(s: &mut State, sup: &str, ttl: Time, now: Time) -> Result<(), OpError> {
    match &s.leadership {
        Some(l) if l.expires_at >= now && l.holder != sup => Err(OpError::NotLeader),
        _ => {
            s.leadership = Some(Leadership { holder: sup.to_string(), expires_at: now + ttl });
            Ok(())
        }
    }
}

/// §7.1 Renew: only while `sup` is the holder. [leader-renews-term]
pub fn leader_renew(s: &mut State, sup: &str, ttl: Time, now: Time) -> Result<(), OpError> {
    match &mut s.leadership {
        Some(l) if l.holder == sup => {
            l.expires_at = now + ttl;
            Ok(())
        }
        _ => Err(OpError::NotLeader),
    }
}

/// §7.1 Resign *(dhp-rs)*: a supervisor that stops cleanly deletes its own
/// row. [leader-election]
pub fn leader_resign(s: &mut State, sup: &str) -> Result<(), OpError> {
    match &s.leadership {
        Some(l) if l.holder == sup => {
            s.leadership = None;
            Ok(())
        }
        _ => Err(OpError::NotLeader),
    }
}
