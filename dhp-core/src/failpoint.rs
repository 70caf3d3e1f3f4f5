//! Failpoints: let a fault injector SIGKILL a process at a precise place
//! inside the protocol (inside the checkpoint transaction, between commit
//! and ship, inside a heartbeat, inside complete).
//!
//! Compiled only with the cargo feature `failpoints` (the chaos harness,
//! the demo and the tests enable it; `cargo build -p dhp-core` and
//! `cargo install` do not). Without it every failpoint is an empty
//! function, and a process that finds `DHP_FAILPOINTS` or
//! `DHP_TRANSPORT_FAILPOINT_PRE_FSYNC_MS` set says once on stderr that it
//! ignores them: a production `dhp` cannot be made to kill itself from its
//! environment.
//!
//! Armed through `DHP_FAILPOINTS`, a comma-separated list of
//! `NAME=kill@N` (die at the Nth hit of NAME) or `NAME=kill%P` (die at each
//! hit with probability P, drawn from `DHP_FAILPOINT_SEED`); `stop@N` and
//! `stop%P` SIGSTOP the process there instead (a pause at a precise place,
//! e.g. inside a write transaction). Unarmed, a failpoint costs one relaxed
//! atomic load.
//!
//! Names: `checkpoint.in_tx`, `ship.after_commit`, `heartbeat`, `complete`,
//! `complete.after_commit`, `orphan.in_tx` (a supervisor's orphan transaction,
//! its writes made, before its commit), `transport.recover` (the transport server,
//! about to replay a journal), `supervise.after_commit` (a supervisor, right
//! after an action's transaction committed and the action was reported),
//! `liveness.dead_token` (a supervisor's liveness poll, having found a
//! holder's token free, before it reads that holder's rows),
//! `orphan.before_trace` (a supervisor with tracing on, an orphan
//! committed, before it emits the dead attempt's span).
//!
//! `DHP_TRANSPORT_FAILPOINT_PRE_FSYNC_MS=N` (0–60000) makes the transport
//! server pause N ms between writing a line and syncing it, so a test can
//! observe that no ack leaves before the sync.

use crate::error::Result;

/// A line on stderr; a closed stderr is ignored (`eprintln!` would panic).
fn stderr_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{args}");
}
use std::time::Duration;

/// The transport server's pause between write and sync.
const PRE_FSYNC_ENV: &str = "DHP_TRANSPORT_FAILPOINT_PRE_FSYNC_MS";

#[cfg(feature = "failpoints")]
pub(crate) use armed::hit;

/// The transport server's pause between writing a line and syncing it
/// (`DHP_TRANSPORT_FAILPOINT_PRE_FSYNC_MS`); zero when unset.
#[cfg(feature = "failpoints")]
pub(crate) fn pre_fsync_pause() -> Result<Duration> {
    match std::env::var(PRE_FSYNC_ENV) {
        Err(_) => Ok(Duration::ZERO),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(ms) if ms <= 60_000 => Ok(Duration::from_millis(ms)),
            Ok(_) => Err(crate::Error::config(format!("{PRE_FSYNC_ENV} must be 0..=60000 milliseconds, not {v:?}"))),
            Err(e) => {
                Err(crate::Error::config_from(format!("{PRE_FSYNC_ENV} must be 0..=60000 milliseconds, not {v:?}"), e))
            }
        },
    }
}

#[cfg(feature = "failpoints")]
pub(crate) use armed::is_armed;

/// Without the `failpoints` feature no failpoint is armed.
#[cfg(not(feature = "failpoints"))]
#[inline]
pub(crate) fn is_armed(_name: &str) -> bool {
    false
}

/// Without the `failpoints` feature a failpoint does nothing (the first
/// one hit says so if `DHP_FAILPOINTS` is set).
#[cfg(not(feature = "failpoints"))]
#[inline]
pub(crate) fn hit(_name: &str) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| ignored("DHP_FAILPOINTS"));
}

/// Without the `failpoints` feature there is no pause (the variable, if
/// set, is reported as ignored).
#[cfg(not(feature = "failpoints"))]
pub(crate) fn pre_fsync_pause() -> Result<Duration> {
    ignored(PRE_FSYNC_ENV);
    Ok(Duration::ZERO)
}

#[cfg(not(feature = "failpoints"))]
fn ignored(var: &str) {
    if std::env::var_os(var).is_some() {
        stderr_line(format_args!("dhp: ignoring {var}: this build has no failpoints (cargo feature `failpoints`)"));
    }
}

#[cfg(feature = "failpoints")]
mod armed {
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, OnceLock};

    enum Trigger {
        Nth(u64),
        Probability(f64),
    }

    #[derive(Clone, Copy)]
    enum Action {
        Kill,
        Stop,
    }

    struct Armed {
        points: HashMap<String, (Action, Trigger, u64)>,
        rng: rand::rngs::StdRng,
    }

    static ANY: AtomicBool = AtomicBool::new(true);
    static ARMED: OnceLock<Option<Mutex<Armed>>> = OnceLock::new();

    fn parse(spec: &str, seed: u64) -> Option<Armed> {
        let mut points = HashMap::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, spec) = part.split_once('=')?;
            let (action, rest) = if let Some(r) = spec.strip_prefix("kill") {
                (Action::Kill, r)
            } else if let Some(r) = spec.strip_prefix("stop") {
                (Action::Stop, r)
            } else {
                return None;
            };
            let trigger = if let Some(n) = rest.strip_prefix('@') {
                Trigger::Nth(n.parse().ok()?)
            } else if let Some(p) = rest.strip_prefix('%') {
                Trigger::Probability(p.parse().ok()?)
            } else {
                return None;
            };
            points.insert(name.to_string(), (action, trigger, 0));
        }
        (!points.is_empty()).then(|| Armed { points, rng: rand::rngs::StdRng::seed_from_u64(seed) })
    }

    fn armed() -> &'static Option<Mutex<Armed>> {
        ARMED.get_or_init(|| {
            let spec = std::env::var("DHP_FAILPOINTS").unwrap_or_default();
            let seed = std::env::var("DHP_FAILPOINT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
            let a = parse(&spec, seed);
            if a.is_none() {
                ANY.store(false, Ordering::Relaxed);
                if !spec.is_empty() {
                    super::stderr_line(format_args!("dhp: ignoring malformed DHP_FAILPOINTS={spec:?}"));
                }
            }
            a.map(Mutex::new)
        })
    }

    /// Whether `name` is armed (a caller may then take the path where the
    /// failpoint sits, e.g. a checkpoint as a client-side transaction).
    pub(crate) fn is_armed(name: &str) -> bool {
        if !ANY.load(Ordering::Relaxed) {
            return false;
        }
        armed().as_ref().is_some_and(|m| m.lock().unwrap_or_else(|p| p.into_inner()).points.contains_key(name))
    }

    /// Pass the failpoint `name`; SIGKILLs this process if it is armed to fire.
    pub(crate) fn hit(name: &str) {
        if !ANY.load(Ordering::Relaxed) {
            return;
        }
        let Some(m) = armed() else { return };
        let mut a = m.lock().unwrap_or_else(|p| p.into_inner());
        let Armed { points, rng } = &mut *a;
        let Some((action, trigger, hits)) = points.get_mut(name) else { return };
        *hits += 1;
        let fire = match trigger {
            Trigger::Nth(n) => *hits == *n,
            Trigger::Probability(p) => rng.gen::<f64>() < *p,
        };
        if !fire {
            return;
        }
        use nix::sys::signal::{kill, Signal};
        match action {
            Action::Kill => {
                super::stderr_line(format_args!("dhp: failpoint {name} fired (hit {hits}), SIGKILL self"));
                let _ = kill(nix::unistd::Pid::this(), Signal::SIGKILL);
                // SIGKILL cannot be caught; this is only reached if kill failed.
                std::process::abort();
            }
            Action::Stop => {
                super::stderr_line(format_args!("dhp: failpoint {name} fired (hit {hits}), SIGSTOP self"));
                // To this thread (tgkill), not the process: a process-wide
                // SIGSTOP may be taken by another thread, and this one ran
                // on past the failpoint until the group stop reached it.
                let _ = nix::sys::signal::raise(Signal::SIGSTOP);
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn specs_parse() {
            assert!(parse("checkpoint.in_tx=kill@3,heartbeat=kill%0.5", 1).is_some());
            assert!(parse("checkpoint.in_tx=stop@2", 1).is_some());
            assert!(parse("x=stop", 1).is_none());
            assert!(parse("x=explode", 1).is_none());
            assert!(parse("", 1).is_none());
        }
    }
}
