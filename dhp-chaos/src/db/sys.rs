//! What the control plane runs: PostgreSQL's programs (found once, as
//! scripts/pg.sh finds them), `runuser` when root (initdb refuses to run as
//! root, so the servers run as `postgres`), the logs a step writes to, and
//! the small pieces every database needs (a private directory, a free
//! port, a password, a query over a server's own socket).

use super::{DbError, Result};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The server binaries: `$DHP_PGBIN` when it holds `initdb`, else the
/// newest `/usr/lib/postgresql/*/bin` that does.
pub fn pgbin() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("DHP_PGBIN").filter(|d| !d.is_empty()).map(PathBuf::from) {
        if d.join("initdb").is_file() {
            return Ok(d);
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    found.sort_by_key(|b| version_key(b));
    found.pop().ok_or_else(|| missing(&["postgresql (initdb)"]))
}

/// `/usr/lib/postgresql/15/bin` → `[15]`: the major, compared as numbers (`sort -V`).
pub(crate) fn version_key(bin: &Path) -> Vec<u64> {
    let v = bin.parent().and_then(Path::file_name).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    v.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse().ok()).collect()
}

/// The error for programs this machine lacks: scripts/services.sh installs them.
pub fn missing(what: &[&str]) -> DbError {
    DbError::Missing { what: what.join(", ") }
}

/// `prog` as `PATH` finds it.
pub fn which(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(prog)).find(|p| p.is_file())
}

/// Are we root (then the servers run as `postgres`, through `runuser`)?
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// `prog ARGS` as the cluster's owner: `runuser -u postgres -- prog` when root.
pub fn owner_argv(root: bool, prog: &Path) -> Vec<OsString> {
    let mut v: Vec<OsString> = Vec::new();
    if root {
        v.extend(["runuser", "-u", "postgres", "--"].map(OsString::from));
    }
    v.push(prog.into());
    v
}

/// A command from an argv (`argv[0]` the program).
pub fn command<S: AsRef<OsStr>>(argv: &[S]) -> Command {
    let mut c = Command::new(argv[0].as_ref());
    c.args(&argv[1..]);
    c
}

/// `prog` run as the cluster's owner.
pub fn as_owner(prog: &Path) -> Command {
    command(&owner_argv(is_root(), prog))
}

/// Where a step's programs write what they say: a log file (appended), or
/// this process's stderr.
#[derive(Debug, Clone, Default)]
pub struct Log(pub Option<PathBuf>);

impl Log {
    /// A `Stdio` writing to the log.
    pub fn stdio(&self) -> Result<Stdio> {
        match &self.0 {
            Some(p) => {
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| DbError::io("opening", p, e))?;
                Ok(Stdio::from(f))
            }
            None => {
                use std::os::fd::AsFd;
                let fd = std::io::stderr().as_fd().try_clone_to_owned().map_err(|e| DbError::io("dup", "stderr", e))?;
                Ok(Stdio::from(fd))
            }
        }
    }

    /// Append a line of the harness's own (a step's error beside its programs' output).
    pub fn note(&self, line: &str) {
        use std::io::Write;
        match &self.0 {
            Some(p) => {
                let f = std::fs::OpenOptions::new().create(true).append(true).open(p);
                let _ = f.and_then(|mut f| writeln!(f, "dhp-chaos: {line}"));
            }
            None => eprintln!("dhp-chaos: {line}"),
        }
    }

    /// ", see LOG" for an error message, when there is a log file.
    pub fn see(&self) -> String {
        self.0.as_ref().map_or(String::new(), |p| format!("; see {}", p.display()))
    }
}

/// A program that would not start: one this machine lacks names the
/// installer, any other failure the step.
pub fn spawn_error(cmd: &Command, what: &str, e: std::io::Error) -> DbError {
    if e.kind() == std::io::ErrorKind::NotFound {
        return missing(&[&cmd.get_program().to_string_lossy()]);
    }
    DbError::Spawn { what: what.to_string(), source: e }
}

/// Run `cmd` (stdout captured, stderr to `log`); its stdout, or an error
/// naming `what`.
pub fn run(mut cmd: Command, what: &str, log: &Log) -> Result<String> {
    let out = cmd.stdin(Stdio::null()).stderr(log.stdio()?).output().map_err(|e| spawn_error(&cmd, what, e))?;
    if !out.status.success() {
        return Err(DbError::Failed { what: what.to_string(), detail: format!("{}{}", out.status, log.see()) });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Run `cmd` with stdout and stderr into `file` (truncated); on failure the
/// error carries the file's last lines (what scripts/pg.sh printed).
pub fn run_logged(mut cmd: Command, what: &str, file: &Path, append: bool) -> Result<()> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(file)
        .map_err(|e| DbError::io("opening", file, e))?;
    let f2 = f.try_clone().map_err(|e| DbError::io("opening", file, e))?;
    let status = cmd.stdin(Stdio::null()).stdout(f).stderr(f2).status().map_err(|e| spawn_error(&cmd, what, e))?;
    if !status.success() {
        return Err(DbError::Failed { what: what.to_string(), detail: format!("{status}:\n{}", tail(file, 20)) });
    }
    Ok(())
}

/// The last `n` lines of a file (for an error message).
pub fn tail(file: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Run `cmd`, ignoring how it ends (teardown: whatever is left is removed).
pub fn quiet(mut cmd: Command) {
    let _ = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
}

/// A new private directory `/tmp/PREFIX.XXXXXX` (0700: the socket, the
/// password file and the data are the owner's alone).
pub fn new_dir(prefix: &str) -> Result<PathBuf> {
    use rand::Rng;
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for _ in 0..100 {
        let mut rng = rand::thread_rng();
        let s: String = (0..6).map(|_| CHARS[rng.gen_range(0..CHARS.len())] as char).collect();
        let dir = PathBuf::from(format!("/tmp/{prefix}.{s}"));
        let mut b = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        match b.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(DbError::io("creating", &dir, e)),
        }
    }
    Err(DbError::Failed { what: format!("creating /tmp/{prefix}.*"), detail: "every name taken".into() })
}

/// Is `dir` one this control plane made (`/tmp/PREFIX.…`), so it may be removed?
pub fn ours(dir: &Path, prefix: &str) -> bool {
    dir.to_str().is_some_and(|d| d.starts_with(&format!("/tmp/{prefix}.")) && !d.contains("/.."))
}

/// Write `text` to `path`, mode `mode`.
pub fn write(path: &Path, text: &str, mode: u32) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(|e| DbError::io("writing", path, e))?;
    f.write_all(text.as_bytes()).map_err(|e| DbError::io("writing", path, e))?;
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode))
        .map_err(|e| DbError::io("chmod", path, e))
}

/// Append `text` to `path` (a server's configuration: its owner stays).
pub fn append(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let mut f =
        std::fs::OpenOptions::new().append(true).open(path).map_err(|e| DbError::io("appending to", path, e))?;
    f.write_all(text.as_bytes()).map_err(|e| DbError::io("appending to", path, e))
}

/// A file's text, trimmed.
pub fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).map_err(|e| DbError::io("reading", path, e))
}

/// `chown -R postgres: PATH` (root only; as another user the files are already its own).
pub fn chown_postgres(path: &Path) -> Result<()> {
    if is_root() {
        let mut c = Command::new("chown");
        c.arg("-R").arg("postgres:").arg(path);
        run(c, "chown -R postgres:", &Log::default())?;
    }
    Ok(())
}

/// A port free on 127.0.0.1 now.
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| DbError::io("binding", "127.0.0.1:0", e))?;
    l.local_addr().map(|a| a.port()).map_err(|e| DbError::io("binding", "127.0.0.1:0", e))
}

/// `dhp-` and 16 random hex digits: the superuser's password.
pub fn password() -> String {
    format!("dhp-{:016x}", rand::random::<u64>())
}

/// `COUNT` random hex digits (a cluster's tag).
pub fn hex(count: usize) -> String {
    let s = format!("{:016x}", rand::random::<u64>());
    s[..count.min(16)].to_string()
}

/// A connection over a server's Unix socket in `sock` (local trust: the
/// directory is the owner's alone), as `user`, to `db`.
pub fn socket_client(sock: &Path, port: u16, user: &str, db: &str, timeout: Duration) -> Result<postgres::Client> {
    let mut cfg = postgres::Config::new();
    cfg.host_path(sock).port(port).user(user).dbname(db).connect_timeout(timeout).application_name("dhp-chaos-db");
    cfg.connect(postgres::NoTls)
        .map_err(|e| DbError::Sql { what: format!("connecting to {}", sock.display()), source: e })
}

/// One value of a query, as text.
pub fn one(c: &mut postgres::Client, sql: &str) -> Result<String> {
    let rows = c.simple_query(sql).map_err(|e| DbError::Sql { what: sql.to_string(), source: e })?;
    Ok(rows
        .iter()
        .find_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or("").to_string()),
            _ => None,
        })
        .unwrap_or_default())
}

/// Statements, one after another (ALTER SYSTEM cannot run in a transaction).
pub fn exec(c: &mut postgres::Client, sql: &[&str]) -> Result<()> {
    for s in sql {
        c.batch_execute(s).map_err(|e| DbError::Sql { what: (*s).to_string(), source: e })?;
    }
    Ok(())
}

/// Poll `f` every `every` until it says yes or `within` is over.
pub fn poll_until(within: Duration, every: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(every);
    }
}
