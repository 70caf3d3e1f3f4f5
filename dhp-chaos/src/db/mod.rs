//! The database control plane of PostgreSQL rounds, in the spirit of
//! Jepsen's `DB` protocol: a database is set up and torn down ([`Db`]), and
//! offers what a fault needs as optional capabilities — [`Kill`] (a node
//! crashes and starts again), [`Pause`], [`Partition`] (a node's links
//! cut) and [`Primary`] (which node is primary, promote, switchover). One
//! implementation per layout:
//!
//! - [`single::Single`]: one server (the layout of `scripts/pg.sh`).
//! - [`cluster::Cluster`]: primary, synchronous and asynchronous standby on
//!   ports of 127.0.0.1, the harness promoting (`scripts/pg-cluster.sh`).
//! - [`auto::Auto`]: pg_auto_failover's monitor and three keepers, a network
//!   namespace per node (`scripts/pg-auto.sh`).
//!
//! The programs are run directly (initdb, pg_ctl, pg_basebackup,
//! pg_autoctl, ip, iptables, kill by pid); none of them through a shell
//! written here. The scripts in `scripts/` keep the same layouts for
//! scripts/test.sh and people; a directory either made is the same. A
//! capability a database lacks is refused with its name ([`DbError::Refused`]),
//! never imitated; a missing program names scripts/services.sh, which
//! installs it (nothing here installs anything).

pub mod auto;
mod auto_net;
pub mod cluster;
pub mod single;
pub mod sys;

use std::path::{Path, PathBuf};

/// The control plane's error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbError {
    /// Programs this machine lacks.
    #[error("missing {what}: run scripts/services.sh as root (it installs them)")]
    Missing {
        /// The programs (and their packages).
        what: String,
    },
    /// A capability this database does not have: the fault is refused, not imitated.
    #[error("{db} cannot {capability}: {why}")]
    Refused {
        /// The database.
        db: &'static str,
        /// The capability asked for.
        capability: &'static str,
        /// Why it has none.
        why: &'static str,
    },
    /// A program that could not be started.
    #[error("running {what}")]
    Spawn {
        /// The step.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A step that failed.
    #[error("{what} failed ({detail})")]
    Failed {
        /// The step.
        what: String,
        /// How (exit status, log).
        detail: String,
    },
    /// A query of the control plane itself.
    #[error("{what}")]
    Sql {
        /// The statement or connection.
        what: String,
        /// The client's error.
        #[source]
        source: postgres::Error,
    },
    /// A file of the database's directory.
    #[error("{doing} {path}")]
    Io {
        /// What was being done.
        doing: &'static str,
        /// The file.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

impl DbError {
    pub(crate) fn io(doing: &'static str, path: impl AsRef<Path>, source: std::io::Error) -> DbError {
        DbError::Io { doing, path: path.as_ref().display().to_string(), source }
    }

    pub(crate) fn failed(what: impl Into<String>, detail: impl Into<String>) -> DbError {
        DbError::Failed { what: what.into(), detail: detail.into() }
    }
}

/// The control plane's result.
pub type Result<T> = std::result::Result<T, DbError>;

/// The layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// One server.
    Single,
    /// A replicated cluster the harness promotes.
    Cluster,
    /// A cluster under pg_auto_failover.
    Auto,
}

impl Kind {
    /// The name of the kind (the watcher's argument).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Single => "single",
            Kind::Cluster => "cluster",
            Kind::Auto => "auto",
        }
    }

    /// `single`, `cluster` or `auto`.
    pub fn parse(s: &str) -> Option<Kind> {
        [Kind::Single, Kind::Cluster, Kind::Auto].into_iter().find(|k| k.name() == s)
    }

    /// What messages call it.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Single => "the single PostgreSQL server",
            Kind::Cluster => "the harness-promoted cluster",
            Kind::Auto => "the pg_auto_failover cluster",
        }
    }

    /// Its directories are `/tmp/PREFIX.XXXXXX`.
    pub fn prefix(self) -> &'static str {
        match self {
            Kind::Single => "dhp-pg",
            Kind::Cluster => "dhp-pgc",
            Kind::Auto => "dhp-pga",
        }
    }

    /// The database in `dir` (made by this kind's setup, or its script).
    pub fn open(self, dir: &Path, log: sys::Log) -> Result<Box<dyn Db>> {
        Ok(match self {
            Kind::Single => Box::new(single::Single::at(dir, log)?),
            Kind::Cluster => Box::new(cluster::Cluster::at(dir, log)?),
            Kind::Auto => Box::new(auto::Auto::at(dir, log)?),
        })
    }

    /// Stop every process of the database in `dir` and remove the
    /// directory (when it is one of ours); whatever is already gone is skipped.
    pub fn teardown(self, dir: &Path) {
        match self {
            Kind::Single => single::stop(dir),
            Kind::Cluster => cluster::stop(dir),
            Kind::Auto => auto::stop(dir),
        }
    }
}

/// A database: where it lives, and what it can do. The capabilities
/// default to none.
pub trait Db: Send {
    /// Its layout.
    fn kind(&self) -> Kind;
    /// Its directory.
    fn dir(&self) -> &Path;
    /// Nodes crash (SIGKILL, `pg_ctl stop -m immediate`) and start again.
    fn kill(&self) -> Option<&dyn Kill> {
        None
    }
    /// Nodes stop (SIGSTOP) and go on.
    fn pause(&self) -> Option<&dyn Pause> {
        None
    }
    /// A node's links are cut and healed.
    fn partition(&self) -> Option<&dyn Partition> {
        None
    }
    /// Which node is primary; promotion; a planned switchover.
    fn primary(&self) -> Option<&dyn Primary> {
        None
    }
}

/// A node dies and comes back. Each call returns what it did, for logs.
pub trait Kill {
    /// Crash `node`.
    fn kill(&self, node: &str) -> Result<String>;
    /// Start `node` again after a crash.
    fn start(&self, node: &str) -> Result<String>;
}

/// A node stops and goes on.
pub trait Pause {
    /// Stop every process of `node`.
    fn pause(&self, node: &str) -> Result<String>;
    /// Let them go on.
    fn resume(&self, node: &str) -> Result<String>;
}

/// Which links of a node a partition cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Every packet on the node's link.
    All,
    /// Only those to and from the failover manager's monitor.
    Monitor,
}

/// A node's links are cut.
pub trait Partition {
    /// Drop the packets `cut` names on `node`'s link.
    fn cut(&self, node: &str, cut: Cut) -> Result<String>;
    /// Remove `node`'s cuts.
    fn heal(&self, node: &str) -> Result<String>;
}

/// The primary.
pub trait Primary {
    /// The node that is primary now.
    fn primary(&self) -> Result<String>;
    /// Promote the promotion candidate (the old primary already fenced):
    /// `promoted NODE LSN`.
    fn promote(&self) -> Result<String>;
    /// A planned switchover (started; the database finishes it).
    fn switchover(&self) -> Result<String>;
}

/// `cap` of `db`, or its refusal.
pub fn require<'a, T: ?Sized>(
    db: &'a dyn Db,
    cap: Option<&'a T>,
    capability: &'static str,
    why: &'static str,
) -> Result<&'a T> {
    cap.ok_or(DbError::Refused { db: db.kind().label(), capability, why })
}

/// The capability [`Kill`] of `db`, or its refusal.
pub fn kill_of(db: &dyn Db) -> Result<&dyn Kill> {
    require(db, db.kill(), "kill a node", "it has no node the harness may crash")
}

/// The capability [`Pause`] of `db`, or its refusal.
pub fn pause_of(db: &dyn Db) -> Result<&dyn Pause> {
    require(
        db,
        db.pause(),
        "pause a node",
        "no pause of a database server is implemented (a stalled client is db-stall)",
    )
}

/// The capability [`Partition`] of `db`, or its refusal.
pub fn partition_of(db: &dyn Db) -> Result<&dyn Partition> {
    require(
        db,
        db.partition(),
        "cut a node's links",
        "its servers share 127.0.0.1 (no network of their own); db-link cuts the clients' link through a proxy",
    )
}

/// The capability [`Primary`] of `db`, or its refusal.
pub fn primary_of(db: &dyn Db) -> Result<&dyn Primary> {
    require(db, db.primary(), "name, promote or switch a primary", "it is one server, with no standby")
}

/// A database this process set up: torn down when dropped (and on a signal
/// or a panic, through [`crate::teardown`]); a watcher process tears it
/// down too should this process die without either.
#[derive(Debug)]
pub struct Owned {
    /// Its layout.
    pub kind: Kind,
    /// Its directory.
    pub dir: PathBuf,
    /// The clients' URL (with the password).
    pub url: String,
    watcher: Option<std::process::Child>,
}

impl Owned {
    /// A new directory of `kind`, registered for teardown, watched: the
    /// setup fills it in, and an error (or a signal) on the way tears down
    /// whatever it made (the drop of the returned value).
    pub(crate) fn begin(kind: Kind) -> Result<Owned> {
        let dir = sys::new_dir(kind.prefix())?;
        if let Err(e) = Owned::register(kind, &dir) {
            kind.teardown(&dir);
            return Err(e);
        }
        let mut o = Owned { kind, dir, url: String::new(), watcher: None };
        o.watcher = Some(Owned::watch(std::process::id(), kind, &o.dir)?);
        Ok(o)
    }

    /// Keep the database past this process (`dhp-chaos db start`): not torn
    /// down on drop; torn down once `watch` (a pid) has exited, if given.
    /// Its directory and URL.
    pub fn keep(mut self, watch: Option<u32>) -> Result<(PathBuf, String)> {
        if let Some(mut w) = self.watcher.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
        let key = (self.kind, self.dir.clone());
        crate::teardown::forget(|r| {
            r.clusters.remove(&key);
        });
        if let Some(pid) = watch {
            // detached: it outlives this process, not the watched one
            drop(Owned::watch(pid, self.kind, &self.dir)?);
        }
        let out = (std::mem::take(&mut self.dir), std::mem::take(&mut self.url));
        std::mem::forget(self);
        Ok(out)
    }

    /// Register `dir` for teardown on a signal, before anything is made in it.
    fn register(kind: Kind, dir: &Path) -> Result<()> {
        crate::teardown::guarded(|r| {
            r.clusters.insert((kind, dir.to_path_buf()));
            Ok(())
        })
        .map_err(|e| DbError::failed("registering the database for teardown", format!("{e:#}")))
    }

    /// Start this program's watcher of `dir`: `dhp-chaos db-watch PID KIND
    /// DIR`, in a session of its own (a Ctrl-C to the terminal's process
    /// group does not reach it), which tears the database down once process
    /// `pid` has exited.
    fn watch(pid: u32, kind: Kind, dir: &Path) -> Result<std::process::Child> {
        let exe = std::env::current_exe().map_err(|e| DbError::io("finding", "this program", e))?;
        // setsid(1) execs the watcher (this child leads no group, so it does not fork)
        let mut c = std::process::Command::new("setsid");
        c.arg(&exe).arg("db-watch").arg(pid.to_string()).arg(kind.name()).arg(dir);
        c.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        c.spawn().map_err(|e| DbError::Spawn { what: format!("{} db-watch", exe.display()), source: e })
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.kind.teardown(&self.dir);
        let key = (self.kind, self.dir.clone());
        crate::teardown::forget(|r| {
            r.clusters.remove(&key);
        });
        if let Some(mut w) = self.watcher.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
    }
}

/// A step that takes seconds (a restart, a promotion, a rejoin, a
/// switchover), run on a thread beside the round's event loop.
#[derive(Debug)]
pub struct Step(Option<std::thread::JoinHandle<Result<String>>>);

impl Step {
    /// Start `f`.
    pub fn spawn(f: impl FnOnce() -> Result<String> + Send + 'static) -> Step {
        Step(Some(std::thread::spawn(f)))
    }

    /// `None` while it runs; its outcome once, when it has ended.
    pub fn try_finish(&mut self) -> Option<Result<String>> {
        if !self.0.as_ref().is_some_and(std::thread::JoinHandle::is_finished) {
            return None;
        }
        let h = self.0.take()?;
        Some(h.join().unwrap_or_else(|_| Err(DbError::failed("a database step", "its thread panicked"))))
    }
}

/// The watcher's body (`dhp-chaos db-watch PID KIND DIR`): once process
/// `pid` has exited, tear down the database in `dir`.
pub fn watch(pid: u32, kind: Kind, dir: &Path) {
    let Ok(pid) = i32::try_from(pid) else { return };
    while nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok() {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    kind.teardown(dir);
}

#[cfg(test)]
mod tests;
