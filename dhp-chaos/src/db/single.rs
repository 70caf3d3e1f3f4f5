//! One server (the layout of `scripts/pg.sh`): `DIR/data` (initdb),
//! `DIR/port`, `DIR/pwfile`, `DIR/server.log`, its Unix socket in `DIR`;
//! password auth over 127.0.0.1, fsync and synchronous_commit on.
//! [`Kill`]: `pg_ctl stop -m immediate` (a crash) and a start again.

use super::sys::{self, Log};
use super::{Db, DbError, Kill, Kind, Owned, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The server in a directory.
#[derive(Debug, Clone)]
pub struct Single {
    dir: PathBuf,
    pgbin: PathBuf,
    log: Log,
}

/// The `-o` options of `pg_ctl start` for the server in `dir` on `port`
/// (`extra`: DIR/extra_opts, the group-commit knobs).
pub fn server_opts(dir: &Path, port: u16, extra: &str) -> String {
    let d = dir.display();
    let mut o = format!(
        "-c port={port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={d} -c fsync=on \
         -c synchronous_commit=on -c max_connections=400"
    );
    if !extra.trim().is_empty() {
        o.push(' ');
        o.push_str(extra.trim());
    }
    o
}

/// `commit_delay` / `commit_siblings` from `DHP_PG_COMMIT_DELAY` and
/// `DHP_PG_COMMIT_SIBLINGS` (as scripts/pg.sh sets them), empty when unset.
pub fn commit_knobs(delay: Option<&str>, siblings: Option<&str>) -> String {
    let mut s = String::new();
    for (name, v) in [("commit_delay", delay), ("commit_siblings", siblings)] {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            s.push_str(&format!(" -c {name}={v}"));
        }
    }
    s
}

/// `initdb` of a data directory: superuser `postgres` with the password in
/// `pwfile`, local trust (the socket directory is private), SCRAM over TCP.
pub fn initdb_args(data: &Path, pwfile: &Path) -> Vec<OsString> {
    let mut pw = OsString::from("--pwfile=");
    pw.push(pwfile);
    vec![
        "-D".into(),
        data.into(),
        "-U".into(),
        "postgres".into(),
        pw,
        "--auth-local=trust".into(),
        "--auth-host=scram-sha-256".into(),
        "-E".into(),
        "UTF8".into(),
        "--locale=C.UTF-8".into(),
    ]
}

/// The clients' URL of a server on 127.0.0.1.
pub fn url(pw: &str, port: u16) -> String {
    format!("postgres://postgres:{pw}@127.0.0.1:{port}/dhp")
}

/// `pg_ctl -D DATA -l LOG -w -t 60 -o OPTS start` as the owner; on failure the server log's tail.
pub(crate) fn pg_ctl_start(pgbin: &Path, data: &Path, log: &Path, opts: &str, out: &Log) -> Result<()> {
    let mut c = sys::as_owner(&pgbin.join("pg_ctl"));
    c.arg("-D").arg(data).arg("-l").arg(log).args(["-w", "-t", "60", "-o", opts, "start"]);
    c.stdout(out.stdio()?);
    sys::run(c, "pg_ctl start", out).map_err(|e| {
        DbError::failed(format!("starting the server in {}", data.display()), format!("{e}:\n{}", sys::tail(log, 20)))
    })?;
    Ok(())
}

/// `pg_ctl -D DATA -m MODE -w stop` as the owner.
pub(crate) fn pg_ctl_stop(pgbin: &Path, data: &Path, mode: &str, out: &Log) -> Result<()> {
    let mut c = sys::as_owner(&pgbin.join("pg_ctl"));
    c.arg("-D").arg(data).args(["-m", mode, "-w", "-t", "60", "stop"]);
    c.stdout(out.stdio()?);
    sys::run(c, &format!("pg_ctl stop -m {mode} ({})", data.display()), out).map(|_| ())
}

impl Single {
    /// A handle on nothing (the unit tests of what each kind offers).
    #[cfg(test)]
    pub(crate) fn fake(dir: PathBuf, pgbin: PathBuf, log: Log) -> Single {
        Single { dir, pgbin, log }
    }

    /// The server in `dir` (made by [`setup`] or `scripts/pg.sh start`).
    pub fn at(dir: &Path, log: Log) -> Result<Single> {
        Ok(Single { dir: dir.to_path_buf(), pgbin: sys::pgbin()?, log })
    }

    fn port(&self) -> Result<u16> {
        let p = sys::read(&self.dir.join("port"))?;
        p.parse()
            .map_err(|_| DbError::failed(format!("reading {}/port", self.dir.display()), format!("{p:?} is no port")))
    }

    /// Start the server (again).
    pub fn start_server(&self) -> Result<()> {
        let extra = std::fs::read_to_string(self.dir.join("extra_opts")).unwrap_or_default();
        let opts = server_opts(&self.dir, self.port()?, &extra);
        pg_ctl_start(&self.pgbin, &self.dir.join("data"), &self.dir.join("server.log"), &opts, &self.log)
    }
}

impl Db for Single {
    fn kind(&self) -> Kind {
        Kind::Single
    }
    fn dir(&self) -> &Path {
        &self.dir
    }
    fn kill(&self) -> Option<&dyn Kill> {
        Some(self)
    }
}

impl Kill for Single {
    /// `pg_ctl stop -m immediate`: the server crashes (`node` is ignored: there is one).
    fn kill(&self, _node: &str) -> Result<String> {
        pg_ctl_stop(&self.pgbin, &self.dir.join("data"), "immediate", &self.log)?;
        Ok("crashed postgres".into())
    }

    fn start(&self, _node: &str) -> Result<String> {
        self.start_server()?;
        Ok("started postgres".into())
    }
}

/// Set up a server owned by this process: initdb, start, `createdb dhp`.
pub fn setup() -> Result<Owned> {
    let pgbin = sys::pgbin()?;
    let mut o = Owned::begin(Kind::Single)?;
    let dir = o.dir.clone();
    let pw = sys::password();
    let port = sys::free_port()?;
    sys::write(&dir.join("port"), &format!("{port}\n"), 0o644)?;
    sys::write(&dir.join("pwfile"), &format!("{pw}\n"), 0o600)?;
    let knobs = commit_knobs(
        std::env::var("DHP_PG_COMMIT_DELAY").ok().as_deref(),
        std::env::var("DHP_PG_COMMIT_SIBLINGS").ok().as_deref(),
    );
    if !knobs.is_empty() {
        sys::write(&dir.join("extra_opts"), &format!("{knobs}\n"), 0o644)?;
    }
    sys::chown_postgres(&dir)?;
    let mut c = sys::as_owner(&pgbin.join("initdb"));
    c.args(initdb_args(&dir.join("data"), &dir.join("pwfile")));
    sys::run_logged(c, "initdb", &dir.join("initdb.log"), false)?;
    let s = Single { dir: dir.clone(), pgbin: pgbin.clone(), log: Log::default() };
    s.start_server()?;
    let mut c = sys::as_owner(&pgbin.join("createdb"));
    c.arg("-h").arg(&dir).args(["-p", &port.to_string(), "-U", "postgres", "dhp"]);
    c.stdout(Log::default().stdio()?);
    sys::run(c, "createdb dhp", &Log::default())?;
    o.url = url(&pw, port);
    Ok(o)
}

/// Stop the server in `dir` (fast, else immediate) and remove `dir` if it is one of ours.
pub fn stop(dir: &Path) {
    if let Ok(pgbin) = sys::pgbin() {
        if dir.join("data/postmaster.pid").exists() {
            let quiet = Log(Some(PathBuf::from("/dev/null")));
            if pg_ctl_stop(&pgbin, &dir.join("data"), "fast", &quiet).is_err() {
                let _ = pg_ctl_stop(&pgbin, &dir.join("data"), "immediate", &quiet);
            }
        }
    }
    if sys::ours(dir, Kind::Single.prefix()) {
        let _ = std::fs::remove_dir_all(dir);
    }
}
