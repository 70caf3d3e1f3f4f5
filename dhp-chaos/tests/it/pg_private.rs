//! The throwaway clusters are private to their owner (issue 47 item 5):
//! another local user (`nobody`) can read neither the superuser's password
//! nor reach the socket (trust auth) of a single server or a replicated
//! cluster — as `dhp-chaos db start` sets them up (what `--store postgres`
//! and `--pg-cluster` run) and as `scripts/pg.sh` / `scripts/pg-cluster.sh`
//! do — and over TCP gets in only with the password. Needs root (to become
//! `nobody`).
use std::path::PathBuf;
use std::process::{Command, Output};

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts").join(name)
}

fn psql() -> PathBuf {
    let found = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin/psql"))
        .find(|p| p.exists());
    found.expect("psql under /usr/lib/postgresql/*/bin (scripts/pg.sh installs PostgreSQL)")
}

/// Run `argv` as `nobody` (setpriv), with `env`.
fn as_nobody(argv: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(argv)
        .envs(env.iter().copied())
        .current_dir("/")
        .output()
        .expect("running setpriv (util-linux)")
}

/// Who sets the cluster up: a script, or `dhp-chaos db` (`kind`).
enum Maker {
    Script(&'static str),
    Chaos(&'static str),
}

impl Maker {
    fn name(&self) -> &'static str {
        match self {
            Maker::Script(n) | Maker::Chaos(n) => n,
        }
    }

    /// The command with `action` (start, stop) and its arguments.
    fn command(&self, action: &str) -> Command {
        match self {
            Maker::Script(n) => {
                let mut c = Command::new("bash");
                c.arg(script(n)).arg(action);
                c
            }
            Maker::Chaos(kind) => {
                let mut c = Command::new(crate::common::chaos_bin());
                c.args(["db", action, kind]);
                c
            }
        }
    }
}

struct Cluster {
    stop: Command,
    dir: String,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.stop.arg(&self.dir).status();
    }
}

fn start(m: &Maker) -> (Cluster, String) {
    let name = m.name();
    let o = m.command("start").output().expect("running the cluster's setup");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{name} start failed:\n{text}\n{}", String::from_utf8_lossy(&o.stderr));
    let last = text.lines().last().unwrap_or("").to_string();
    let (dir, url) = last.split_once(' ').unwrap_or_else(|| panic!("{name}: no `DIR URL` line: {text}"));
    (Cluster { stop: m.command("stop"), dir: dir.into() }, url.into())
}

fn check(m: Maker) {
    assert_eq!(nix::unistd::geteuid().as_raw(), 0, "this test becomes `nobody`: run it as root (CI does)");
    let (c, url) = start(&m);
    let name = m.name();
    let pw = url.split("postgres://postgres:").nth(1).and_then(|r| r.split('@').next()).unwrap().to_string();
    let port = url.split("@127.0.0.1:").nth(1).and_then(|r| r.split(['/', ',']).next()).unwrap().to_string();
    let psql = psql();
    let psql = psql.to_str().unwrap();
    let tcp = format!("host=127.0.0.1 port={port} user=postgres dbname=dhp");
    // nobody can run psql and log in with the password: the refusals below are the cluster's
    let ok = as_nobody(&[psql, &tcp, "-w", "-Atc", "select 1"], &[("PGPASSWORD", &pw)]);
    assert!(ok.status.success(), "{name}: nobody with the password: {}", String::from_utf8_lossy(&ok.stderr));
    // ... but reads no password
    let pwfile = format!("{}/pwfile", c.dir);
    let read = as_nobody(&["cat", &pwfile], &[]);
    assert!(
        !read.status.success() && !String::from_utf8_lossy(&read.stdout).contains(&pw),
        "{name}: nobody read {pwfile}"
    );
    // ... reaches no socket (trust auth there)
    let sock_dir = if matches!(name, "pg.sh" | "single") { c.dir.clone() } else { format!("{}/n0", c.dir) };
    let sock = format!("host={sock_dir} port={port} user=postgres dbname=dhp");
    let via_socket = as_nobody(&[psql, &sock, "-w", "-Atc", "select 1"], &[]);
    assert!(
        !via_socket.status.success(),
        "{name}: nobody connected through the socket in {sock_dir} without a password"
    );
    // root (the owner's side) does, through the same socket: the path is right
    let owner =
        Command::new("runuser").args(["-u", "postgres", "--", psql, &sock, "-w", "-Atc", "select 1"]).output().unwrap();
    assert!(owner.status.success(), "{name}: the owner through {sock_dir}: {}", String::from_utf8_lossy(&owner.stderr));
    // ... and over TCP without the password: refused
    let no_pw = as_nobody(&[psql, &tcp, "-w", "-Atc", "select 1"], &[]);
    assert!(!no_pw.status.success(), "{name}: nobody logged in over TCP without a password");
    let mode = std::fs::metadata(&c.dir).map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777);
    assert_eq!(mode.unwrap(), 0o700, "{name}: {}", c.dir);
}

#[test]
fn pg_sh_cluster_is_private_to_its_owner() {
    check(Maker::Script("pg.sh"));
}

#[test]
fn pg_cluster_sh_cluster_is_private_to_its_owner() {
    check(Maker::Script("pg-cluster.sh"));
}

#[test]
fn chaos_single_server_is_private_to_its_owner() {
    check(Maker::Chaos("single"));
}

#[test]
fn chaos_cluster_is_private_to_its_owner() {
    check(Maker::Chaos("cluster"));
}
