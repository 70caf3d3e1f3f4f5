//! A replicated cluster the harness promotes (the layout of
//! `scripts/pg-cluster.sh`): nodes `n0`, `n1`, `n2` under DIR, each with
//! `data/`, `port`, its socket and `server.log`; `DIR/roles` (`primary
//! sync async`), `DIR/mode` (`sync`/`async`), `DIR/fenced` (the crashed
//! primary, never started again as one). Streaming replication on
//! 127.0.0.1; with `sync`, `synchronous_standby_names = 'FIRST 1 (sync)'`.
//!
//! [`Kill`]: the primary crashes and is fenced (a standby is not crashed
//! here; a fenced node comes back through [`Cluster::rejoin`], rebuilt).
//! [`Primary`]: the roles file, `pg_ctl promote`, and a switchover's first
//! half (the primary stopped cleanly, `-m fast`).

use super::single::{initdb_args, pg_ctl_start, pg_ctl_stop};
use super::sys::{self, Log};
use super::{Db, DbError, Kill, Kind, Owned, Primary, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The node names.
pub const NODES: [&str; 3] = ["n0", "n1", "n2"];

/// The cluster in a directory.
#[derive(Debug, Clone)]
pub struct Cluster {
    dir: PathBuf,
    pgbin: PathBuf,
    log: Log,
}

/// The `-o` options of node `n` of the cluster in `dir`.
pub fn node_opts(dir: &Path, n: &str, port: u16) -> String {
    format!(
        "-c port={port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={}/{n} -c fsync=on \
         -c synchronous_commit=on -c max_connections=400 -c cluster_name={n} -c wal_level=replica \
         -c max_wal_senders=10 -c wal_keep_size=256MB -c hot_standby=on -c wal_receiver_status_interval=1s \
         -c wal_sender_timeout=5s -c wal_receiver_timeout=5s",
        dir.display()
    )
}

/// A standby's `primary_conninfo` (the password inline, as the script writes it).
pub fn conninfo(port: u16, pw: &str, app: &str) -> String {
    format!("host=127.0.0.1 port={port} user=postgres password={pw} application_name={app}")
}

/// `synchronous_standby_names` with `candidates` next in line: none when async.
pub fn sync_names(mode: &str, candidates: &str) -> String {
    if mode == "async" {
        String::new()
    } else {
        format!("FIRST 1 ({candidates})")
    }
}

/// The multi-host URL the clients follow the primary with.
pub fn url(pw: &str, hosts: &[(String, u16)]) -> String {
    let h: Vec<String> = hosts.iter().map(|(h, p)| format!("{h}:{p}")).collect();
    format!("postgres://postgres:{pw}@{}/dhp?target_session_attrs=read-write", h.join(","))
}

/// `primary sync async` from a roles file's text.
pub fn parse_roles(text: &str) -> Option<(String, String, String)> {
    let mut w = text.split_whitespace().map(str::to_string);
    match (w.next(), w.next(), w.next(), w.next()) {
        (Some(p), Some(s), Some(a), None) => Some((p, s, a)),
        _ => None,
    }
}

impl Cluster {
    /// A handle on nothing (the unit tests of what each kind offers).
    #[cfg(test)]
    pub(crate) fn fake(dir: PathBuf, pgbin: PathBuf, log: Log) -> Cluster {
        Cluster { dir, pgbin, log }
    }

    /// The cluster in `dir` (made by [`setup`] or `scripts/pg-cluster.sh start`).
    pub fn at(dir: &Path, log: Log) -> Result<Cluster> {
        Ok(Cluster { dir: dir.to_path_buf(), pgbin: sys::pgbin()?, log })
    }

    fn port(&self, n: &str) -> Result<u16> {
        let p = sys::read(&self.dir.join(n).join("port"))?;
        p.parse().map_err(|_| DbError::failed(format!("reading {}/{n}/port", self.dir.display()), "no port"))
    }

    fn pw(&self) -> Result<String> {
        sys::read(&self.dir.join("pwfile"))
    }

    /// (primary, synchronous standby, asynchronous standby).
    pub fn roles(&self) -> Result<(String, String, String)> {
        let text = sys::read(&self.dir.join("roles"))?;
        parse_roles(&text)
            .ok_or_else(|| DbError::failed(format!("reading {}/roles", self.dir.display()), format!("{text:?}")))
    }

    /// Node `n`, over its socket, database `db`.
    fn client(&self, n: &str, db: &str) -> Result<postgres::Client> {
        sys::socket_client(&self.dir.join(n), self.port(n)?, "postgres", db, Duration::from_secs(10))
    }

    fn start_node(&self, n: &str) -> Result<()> {
        let d = self.dir.join(n);
        let opts = node_opts(&self.dir, n, self.port(n)?);
        pg_ctl_start(&self.pgbin, &d.join("data"), &d.join("server.log"), &opts, &self.log)
    }

    /// A fresh standby `n` of primary `from`: pg_basebackup, standby.signal, primary_conninfo, started.
    fn make_standby(&self, n: &str, from: &str) -> Result<()> {
        let data = self.dir.join(n).join("data");
        let _ = std::fs::remove_dir_all(&data);
        let pw = self.pw()?;
        let mut c = sys::as_owner(&self.pgbin.join("pg_basebackup"));
        // the password in the environment, not in an argv /proc shows everyone
        c.env("PGPASSWORD", &pw).arg("-D").arg(&data).args(["-X", "stream", "-c", "fast", "-h", "127.0.0.1"]);
        c.args(["-p", &self.port(from)?.to_string(), "-U", "postgres"]);
        sys::run_logged(c, &format!("pg_basebackup of {n}"), &self.dir.join(n).join("basebackup.log"), false)?;
        sys::write(&data.join("standby.signal"), "", 0o600)?;
        sys::chown_postgres(&data.join("standby.signal"))?;
        let line = format!("primary_conninfo = '{}'\n", conninfo(self.port(from)?, &pw, n));
        sys::append(&data.join("postgresql.auto.conf"), &line)?;
        self.start_node(n)
    }

    /// Wait (30 s at most) until primary `p` has `want` streaming standbys.
    fn wait_streaming(&self, p: &str, want: i64) -> Result<()> {
        let mut got = 0;
        let ok = sys::poll_until(Duration::from_secs(30), Duration::from_millis(100), || {
            got = self
                .client(p, "dhp")
                .and_then(|mut c| {
                    sys::one(&mut c, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
                })
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            got >= want
        });
        if ok {
            Ok(())
        } else {
            Err(DbError::failed(
                format!("waiting for {p}'s standbys"),
                format!("{got} streaming after 30 s, wanted {want}"),
            ))
        }
    }

    /// The promotion candidate (the synchronous standby) stops streaming
    /// (`primary_conninfo = ''`): WAL shipping to it stops.
    pub fn detach(&self) -> Result<String> {
        let (_, s, _) = self.roles()?;
        let mut c = self.client(&s, "dhp")?;
        sys::exec(&mut c, &["ALTER SYSTEM SET primary_conninfo = ''", "SELECT pg_reload_conf()"])?;
        let gone = sys::poll_until(Duration::from_secs(5), Duration::from_millis(50), || {
            sys::one(&mut c, "SELECT count(*) FROM pg_stat_wal_receiver").is_ok_and(|n| n == "0")
        });
        if !gone {
            return Err(DbError::failed(
                format!("detaching {s}"),
                "it still receives WAL 5 s after primary_conninfo=''",
            ));
        }
        Ok(format!("detached {s}"))
    }

    /// Stop the primary (`immediate`: a crash; `fast`: its WAL shipped first) and fence it.
    fn stop_primary(&self, mode: &str) -> Result<String> {
        let (p, _, _) = self.roles()?;
        pg_ctl_stop(&self.pgbin, &self.dir.join(&p).join("data"), mode, &self.log)?;
        sys::write(&self.dir.join("fenced"), &format!("{p}\n"), 0o644)?;
        Ok(if mode == "immediate" { format!("crashed {p}") } else { format!("stopped {p}") })
    }

    /// Rebuild the two other nodes from the new primary and start them as
    /// its standbys (what Patroni's reinit does); wait until both stream.
    pub fn rejoin(&self) -> Result<String> {
        let (p, s, a) = self.roles()?;
        for n in [&s, &a] {
            let data = self.dir.join(n).join("data");
            if data.join("postmaster.pid").exists() {
                let _ = pg_ctl_stop(&self.pgbin, &data, "immediate", &Log(Some("/dev/null".into())));
            }
            self.make_standby(n, &p)?;
        }
        let _ = std::fs::remove_file(self.dir.join("fenced"));
        self.wait_streaming(&p, 2)?;
        Ok(format!("rejoined {s} {a}"))
    }
}

impl Db for Cluster {
    fn kind(&self) -> Kind {
        Kind::Cluster
    }
    fn dir(&self) -> &Path {
        &self.dir
    }
    fn kill(&self) -> Option<&dyn Kill> {
        Some(self)
    }
    fn primary(&self) -> Option<&dyn Primary> {
        Some(self)
    }
}

impl Kill for Cluster {
    /// Crash the primary (`pg_ctl stop -m immediate`) and fence it; any
    /// other node is refused (the faults of this cluster crash its primary).
    fn kill(&self, node: &str) -> Result<String> {
        let (p, _, _) = self.roles()?;
        if node != p {
            return Err(DbError::Refused {
                db: Kind::Cluster.label(),
                capability: "kill a standby",
                why: "its faults crash the primary (db-failover); a standby's loss is db-standby-lost under pg_auto_failover",
            });
        }
        self.stop_primary("immediate")
    }

    fn start(&self, node: &str) -> Result<String> {
        let _ = node;
        Err(DbError::Refused {
            db: Kind::Cluster.label(),
            capability: "start a crashed node as it was",
            why: "a crashed primary is fenced; rejoin rebuilds it as a standby of the new one",
        })
    }
}

impl Primary for Cluster {
    fn primary(&self) -> Result<String> {
        Ok(self.roles()?.0)
    }

    /// `pg_ctl promote` of the candidate (refused unless the primary is
    /// fenced), the next in line its synchronous standby; the roles rotate.
    fn promote(&self) -> Result<String> {
        let (p, s, a) = self.roles()?;
        let fenced = sys::read(&self.dir.join("fenced")).unwrap_or_default();
        if fenced != p {
            return Err(DbError::failed("promote", format!("refused: the primary {p} is not fenced (crash it first)")));
        }
        let mut c = sys::as_owner(&self.pgbin.join("pg_ctl"));
        c.arg("-D").arg(self.dir.join(&s).join("data")).args(["-w", "-t", "60", "promote"]);
        c.stdout(self.log.stdio()?);
        sys::run(c, &format!("pg_ctl promote of {s}"), &self.log)?;
        // ONE name only: with `FIRST 1 (a, p)` a commit acknowledged by p
        // alone (while a lags) would be lost when a is promoted next
        let mode = sys::read(&self.dir.join("mode")).unwrap_or_default();
        let mut c = self.client(&s, "postgres")?;
        sys::exec(
            &mut c,
            &[
                "ALTER SYSTEM RESET primary_conninfo",
                &format!("ALTER SYSTEM SET synchronous_standby_names = '{}'", sync_names(&mode, &a)),
                "SELECT pg_reload_conf()",
            ],
        )?;
        let lsn = sys::one(&mut c, "SELECT pg_current_wal_lsn()")?;
        sys::write(&self.dir.join("roles"), &format!("{s} {a} {p}\n"), 0o644)?;
        Ok(format!("promoted {s} {lsn}"))
    }

    /// A planned switchover's first half: the primary stopped cleanly
    /// (`-m fast`: every WAL record sent to the connected standbys first), fenced.
    fn switchover(&self) -> Result<String> {
        self.stop_primary("fast")
    }
}

/// Set up a cluster owned by this process (`async`: no synchronous standby).
pub fn setup(async_: bool) -> Result<Owned> {
    let pgbin = sys::pgbin()?;
    let mut o = Owned::begin(Kind::Cluster)?;
    let dir = o.dir.clone();
    let pw = sys::password();
    sys::write(&dir.join("pwfile"), &format!("{pw}\n"), 0o600)?;
    let mode = if async_ { "async" } else { "sync" };
    sys::write(&dir.join("mode"), &format!("{mode}\n"), 0o644)?;
    let mut hosts = Vec::new();
    for n in NODES {
        std::fs::create_dir_all(dir.join(n)).map_err(|e| DbError::io("creating", dir.join(n), e))?;
        let port = sys::free_port()?;
        sys::write(&dir.join(n).join("port"), &format!("{port}\n"), 0o644)?;
        hosts.push(("127.0.0.1".to_string(), port));
    }
    sys::chown_postgres(&dir)?;
    let mut c = sys::as_owner(&pgbin.join("initdb"));
    c.args(initdb_args(&dir.join("n0/data"), &dir.join("pwfile")));
    sys::run_logged(c, "initdb", &dir.join("initdb.log"), false)?;
    let cl = Cluster { dir: dir.clone(), pgbin: pgbin.clone(), log: Log::default() };
    cl.start_node("n0")?;
    let mut c = cl.client("n0", "postgres")?;
    sys::exec(&mut c, &["CREATE DATABASE dhp"])?;
    cl.make_standby("n1", "n0")?;
    cl.make_standby("n2", "n0")?;
    sys::write(&dir.join("roles"), "n0 n1 n2\n", 0o644)?;
    // only n1 is synchronous (FIRST 1 (n1)): n2 stays asynchronous
    let names = format!("ALTER SYSTEM SET synchronous_standby_names = '{}'", sync_names(mode, "n1"));
    sys::exec(&mut cl.client("n0", "dhp")?, &[&names, "SELECT pg_reload_conf()"])?;
    cl.wait_streaming("n0", 2)?;
    o.url = url(&pw, &hosts);
    Ok(o)
}

/// Stop every node of the cluster in `dir` (immediate) and remove `dir` if it is one of ours.
pub fn stop(dir: &Path) {
    if let Ok(pgbin) = sys::pgbin() {
        for n in NODES {
            let data = dir.join(n).join("data");
            if data.join("postmaster.pid").exists() {
                let _ = pg_ctl_stop(&pgbin, &data, "immediate", &Log(Some("/dev/null".into())));
            }
        }
    }
    if sys::ours(dir, Kind::Cluster.prefix()) {
        let _ = std::fs::remove_dir_all(dir);
    }
}
