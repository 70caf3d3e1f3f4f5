//! A pool of healthy adapter processes reused across assertions, and the
//! lease that returns a process to it.

use super::{Adapter, AdapterError, Profile, StderrLog};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Healthy adapter processes of one implementation and profile, reused
/// across assertions (every assertion works in its own store roots).
pub struct Pool {
    command: String,
    profile: Profile,
    timeout: Duration,
    echo_stderr: bool,
    idle: Mutex<Vec<Adapter>>,
    /// Requests of this pool's processes that timed out.
    timeouts: Arc<AtomicU64>,
    log: Option<Arc<StderrLog>>,
}

/// Idle processes kept per pool; extra ones are closed when returned.
const MAX_IDLE: usize = 6;

impl Pool {
    /// An empty pool of `command` (a shell command line) started with
    /// `profile`; each request waits at most `timeout`, and with
    /// `echo_stderr` the processes' stderr lines are echoed to ours.
    pub fn new(command: &str, profile: Profile, timeout: Duration, echo_stderr: bool) -> Pool {
        Pool {
            command: command.to_string(),
            profile,
            timeout,
            echo_stderr,
            idle: Mutex::new(Vec::new()),
            timeouts: Arc::default(),
            log: None,
        }
    }

    /// Copy every process's stderr lines to `log` too.
    pub fn with_log(mut self, log: Arc<StderrLog>) -> Pool {
        self.log = Some(log);
        self
    }

    /// How many requests of this pool's processes have timed out so far.
    pub fn timeouts(&self) -> u64 {
        self.timeouts.load(Ordering::SeqCst)
    }

    fn start(&self) -> Result<Adapter, AdapterError> {
        let mut a =
            Adapter::start_logged(&self.command, self.profile, self.timeout, self.echo_stderr, self.log.clone())?;
        a.timeouts = Some(self.timeouts.clone());
        Ok(a)
    }

    /// An idle process, or a new one.
    pub fn get(&self) -> Result<Lease<'_>, AdapterError> {
        loop {
            let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            match idle {
                // it wrote while idle: killed (dropped), never reused
                Some(a) if a.spoke_unasked() => drop(a),
                Some(a) => return Ok(Lease { pool: self, adapter: Some(a) }),
                None => return self.fresh(),
            }
        }
    }

    /// Always a new process.
    pub fn fresh(&self) -> Result<Lease<'_>, AdapterError> {
        let mut a = self.start()?;
        a.handshake()?;
        Ok(Lease { pool: self, adapter: Some(a) })
    }

    /// `n` new processes, started together and handshaken in parallel.
    pub fn fresh_many(&self, n: usize) -> Result<Vec<Lease<'_>>, AdapterError> {
        let mut started = Vec::with_capacity(n);
        for _ in 0..n {
            let mut a = self.start()?;
            let id = a.send_request(super::exchange::hello_request(), None)?;
            started.push((a, id));
        }
        let mut out = Vec::with_capacity(n);
        for (mut a, id) in started {
            a.finish_handshake(id)?;
            out.push(Lease { pool: self, adapter: Some(a) });
        }
        Ok(out)
    }

    /// Close every idle process.
    pub fn drain(&self) {
        let idle: Vec<Adapter> = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|e| e.into_inner()));
        for a in idle {
            a.close();
        }
    }

    fn put_back(&self, mut a: Adapter) {
        if a.is_broken() || a.spoke_unasked() {
            return; // dropped: killed
        }
        // the next holder brings its own clock, if any
        a.follow_clock(None);
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(a);
        } else {
            drop(idle);
            a.close();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.drain();
    }
}

/// A process borrowed from a [`Pool`]; returned when dropped unless broken.
pub struct Lease<'p> {
    pool: &'p Pool,
    adapter: Option<Adapter>,
}

impl std::ops::Deref for Lease<'_> {
    type Target = Adapter;
    fn deref(&self) -> &Adapter {
        self.adapter.as_ref().expect("present until drop")
    }
}

impl std::ops::DerefMut for Lease<'_> {
    fn deref_mut(&mut self) -> &mut Adapter {
        self.adapter.as_mut().expect("present until drop")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(a) = self.adapter.take() {
            self.pool.put_back(a);
        }
    }
}
