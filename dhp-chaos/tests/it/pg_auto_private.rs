//! pg_auto_failover's cluster, as `dhp-chaos db start auto` sets it up
//! (what `dhp-chaos --failover-manager pg_auto_failover` runs) and as
//! `scripts/pg-auto.sh` does, is private to its owner (issue 47 item 5): another
//! local user (`nobody`, in the root namespace like every local user's
//! processes) reaches no server socket (they are in DIR/NODE/sock, 0700, not
//! the shared /var/run/postgresql), gets in as none of pg_auto_failover's
//! trusted roles (the replicator is a SUPERUSER) and as `postgres` only with
//! the password; and a start interrupted by SIGINT (Ctrl-C) leaves no
//! process, namespace, link or directory behind. Needs root.
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-auto.sh")
}

/// `pg-auto.sh ACTION` or `dhp-chaos db ACTION auto`.
fn command(chaos: bool, action: &str) -> Command {
    if chaos {
        let mut c = Command::new(crate::common::chaos_bin());
        c.args(["db", action, "auto"]);
        c
    } else {
        let mut c = Command::new("bash");
        c.arg(script()).arg(action);
        c
    }
}

/// What the setup says on stderr before the directory's name.
fn dir_line(chaos: bool) -> &'static str {
    if chaos {
        "dhp-chaos: pg_auto_failover cluster directory "
    } else {
        "pg-auto.sh: cluster directory "
    }
}

fn psql() -> String {
    let found = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin/psql"))
        .find(|p| p.exists());
    found.expect("psql under /usr/lib/postgresql/*/bin (pg-auto.sh installs PostgreSQL)").display().to_string()
}

/// `psql CONNINFO -c 'select current_user'` as `nobody` (setpriv), `PGPASSWORD` if given.
fn as_nobody(conninfo: &str, pw: Option<&str>) -> Output {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", &psql(), conninfo, "-w", "-Atc"])
        .arg("select current_user")
        .env_remove("PGPASSWORD")
        .current_dir("/");
    if let Some(pw) = pw {
        c.env("PGPASSWORD", pw);
    }
    c.output().expect("running setpriv (util-linux)")
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).map(|s| s.trim().to_string()).unwrap_or_default()
}

struct Stop(bool, String);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = command(self.0, "stop").arg(&self.1).status();
    }
}

fn need_root() {
    assert_eq!(
        nix::unistd::geteuid().as_raw(),
        0,
        "this test becomes `nobody` and makes namespaces: run it as root (CI does)"
    );
}

#[test]
fn pg_auto_cluster_is_private_to_its_owner() {
    private(false);
}

#[test]
fn chaos_auto_cluster_is_private_to_its_owner() {
    private(true);
}

fn private(chaos: bool) {
    need_root();
    let o = command(chaos, "start").output().expect("running the setup");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "start failed:\n{text}\n{}", String::from_utf8_lossy(&o.stderr));
    let (dir, url) = text.lines().last().and_then(|l| l.split_once(' ')).expect("a `DIR URL` line");
    let _stop = Stop(chaos, dir.to_string());
    let dir = Path::new(dir);
    let pw = url.split("postgres://postgres:").nth(1).and_then(|r| r.split('@').next()).unwrap().to_string();
    let sub = read(dir, "subnet");
    let node = |n: &str, h: u8| (format!("{sub}.{h}"), read(dir, &format!("{n}/port")));
    let (mon_host, mon_port) = node("mon", 2);
    let (n0_host, n0_port) = node("n0", 3);
    let tcp = |host: &str, port: &str, user: &str, db: &str| format!("host={host} port={port} user={user} dbname={db}");
    // nobody reaches the primary and logs in with the password: the refusals below are the cluster's
    let ok = as_nobody(&tcp(&n0_host, &n0_port, "postgres", "dhp"), Some(&pw));
    assert!(ok.status.success(), "nobody with the password: {}", String::from_utf8_lossy(&ok.stderr));
    let refused = |what: &str, o: Output| {
        assert!(
            !o.status.success() && !String::from_utf8_lossy(&o.stdout).contains(what.split(' ').next().unwrap()),
            "nobody got in as {what}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    };
    refused("postgres without the password", as_nobody(&tcp(&n0_host, &n0_port, "postgres", "dhp"), None));
    // pg_auto_failover's trusted roles: not from the root namespace
    for (i, n) in ["n0", "n1", "n2"].iter().enumerate() {
        let (h, p) = node(n, 3 + i as u8);
        refused(
            "pgautofailover_replicator (a superuser)",
            as_nobody(&tcp(&h, &p, "pgautofailover_replicator", "dhp"), None),
        );
        refused("pgautofailover_monitor", as_nobody(&tcp(&h, &p, "pgautofailover_monitor", "dhp"), None));
    }
    refused("autoctl_node", as_nobody(&tcp(&mon_host, &mon_port, "autoctl_node", "pg_auto_failover"), None));
    // no socket on the shared directory; the private one is closed to nobody, open to the owner
    for n in ["mon", "n0", "n1", "n2"] {
        let port = read(dir, &format!("{n}/port"));
        let shared = format!("/var/run/postgresql/.s.PGSQL.{port}");
        assert!(!Path::new(&shared).exists(), "{n}: a socket on the shared {shared}");
        let sock = dir.join(n).join("sock");
        let conn = format!("host={} port={port} user=postgres dbname=postgres", sock.display());
        refused("postgres through the private socket", as_nobody(&conn, None));
        let owner = Command::new("runuser")
            .args(["-u", "postgres", "--", &psql(), &conn, "-w", "-Atc", "select 1"])
            .output()
            .unwrap();
        assert!(
            owner.status.success(),
            "{n}: the owner through {}: {}",
            sock.display(),
            String::from_utf8_lossy(&owner.stderr)
        );
    }
    let cat = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", "cat"])
        .arg(dir.join("pwfile"))
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&cat.stdout).contains(&pw), "nobody read the pwfile");
    let mode = std::fs::metadata(dir).map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777);
    assert_eq!(mode.unwrap(), 0o700, "{}", dir.display());
}

/// Every process (pid, cmdline) whose command line names `dir`.
fn naming(dir: &str) -> Vec<(String, String)> {
    let mut out = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(dir) {
            out.push((e.file_name().to_string_lossy().into_owned(), cmd));
        }
    }
    out
}

fn links(tag: &str) -> Vec<String> {
    let o = Command::new("ip").args(["-o", "link", "show"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.contains(&format!("da{tag}"))).map(String::from).collect()
}

fn namespaces(tag: &str) -> Vec<String> {
    let o = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains(&format!("dhpauto-{tag}-")))
        .map(String::from)
        .collect()
}

#[test]
fn pg_auto_start_interrupted_by_sigint_leaves_nothing() {
    interrupted(false);
}

#[test]
fn chaos_auto_start_interrupted_by_sigint_leaves_nothing() {
    interrupted(true);
}

fn interrupted(chaos: bool) {
    need_root();
    let mut child = command(chaos, "start")
        .args(["--watch", &std::process::id().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("running pg-auto.sh");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let dir = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "the setup ended before naming its directory");
        if let Some(d) = line.trim().strip_prefix(dir_line(chaos)) {
            break d.to_string();
        }
    };
    let _stop = Stop(chaos, dir.clone());
    // drain stderr (pg_autoctl logs there) so the script never blocks on it
    let drain = std::thread::spawn(move || std::io::read_to_string(err).unwrap_or_default());
    // interrupt once the monitor runs and the first node is being created
    let started = Instant::now();
    while !Path::new(&dir).join("n0/create.log").exists() {
        assert!(started.elapsed() < Duration::from_secs(90), "n0 not being created after 90 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let tag = read(Path::new(&dir), "tag");
    assert_eq!(namespaces(&tag).len(), 4, "the four namespaces before the interrupt");
    assert!(links(&tag).iter().any(|l| l.contains(&format!("da{tag}br"))), "the bridge before the interrupt");
    let before = naming(&dir);
    assert!(before.len() >= 3, "the keeper, its postgres and the watcher run before the interrupt: {before:?}");
    // Ctrl-C: SIGINT to the script's whole foreground process group
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT)
        .expect("SIGINT");
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "the setup still running 60 s after SIGINT");
        std::thread::sleep(Duration::from_millis(100));
    };
    let log = drain.join().unwrap();
    assert!(!status.success(), "an interrupted start must not report success");
    // every process, namespace, link and the directory gone (a killed process may take a moment to be reaped)
    let t = Instant::now();
    while !naming(&dir).is_empty() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(naming(&dir).is_empty(), "processes left after SIGINT: {:?}\n{log}", naming(&dir));
    assert!(namespaces(&tag).is_empty(), "namespaces left: {:?}\n{log}", namespaces(&tag));
    assert!(links(&tag).is_empty(), "links left: {:?}\n{log}", links(&tag));
    assert!(!Path::new(&dir).exists(), "{dir} left\n{log}");
}
