//! A cluster under a real failover manager, pg_auto_failover (the layout of
//! `scripts/pg-auto.sh`): a monitor and three data nodes, each in its own
//! network namespace ([`super::auto_net`]); `DIR/NODE/{data,cfg,share,run,sock,port,host}`,
//! `DIR/{pwfile,tag,subnet,manager}`. Quorum-synchronous replication
//! (`ANY 1`), set and kept by the monitor, which detects a dead primary and
//! promotes; the harness never promotes.
//!
//! Failover timing is tuned down from the defaults (20–30 s) so a chaos
//! round sees several: the monitor health-checks every second, a node is
//! unhealthy after 3 s, a primary not heard from is given 5 s to demote
//! itself before a standby is promoted, and a keeper cut off from the
//! monitor and every standby demotes its primary after 3 s.
//!
//! [`Kill`]: every process of a node's namespace SIGKILLed (the host died),
//! its keeper started again (it rejoins, pg_rewind). [`Partition`]:
//! iptables in the node's namespace. [`Primary`]: the monitor's view and
//! `pg_autoctl perform switchover`; promotion is refused (the monitor's).

use super::auto_net::{self as net, ALL};
use super::sys::{self, Log};
use super::{Cut, Db, DbError, Kill, Kind, Owned, Partition, Primary, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One node as pg_auto_failover's monitor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    /// `n0`, `n1`, `n2`.
    pub name: String,
    /// The state its keeper last reported.
    pub reported: String,
    /// The state the monitor assigned.
    pub goal: String,
}

/// The node both the monitor and its keeper call primary, if exactly one.
pub fn primary_of(nodes: &[NodeState]) -> Option<&str> {
    let mut p = nodes.iter().filter(|n| n.reported == "primary" && n.goal == "primary");
    match (p.next(), p.next()) {
        (Some(n), None) => Some(&n.name),
        _ => None,
    }
}

/// One primary and every other node a streaming secondary, each where the monitor wants it.
pub fn whole(nodes: &[NodeState]) -> bool {
    primary_of(nodes).is_some()
        && nodes.len() >= 2
        && nodes.iter().all(|n| n.reported == n.goal && (n.goal == "primary" || n.goal == "secondary"))
}

/// The monitor's settings (appended to its postgresql.auto.conf).
pub const MONITOR_CONF: &str = "pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 3000
pgautofailover.primary_demote_timeout = 5000
pgautofailover.startup_grace_period = 2000
";

/// The cluster in a directory.
#[derive(Debug, Clone)]
pub struct Auto {
    dir: PathBuf,
    pgbin: PathBuf,
    tag: String,
    sub: String,
    log: Log,
}

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

impl Auto {
    /// A handle on nothing (the unit tests of what each kind offers).
    #[cfg(test)]
    pub(crate) fn fake(dir: PathBuf, pgbin: PathBuf, log: Log) -> Auto {
        Auto { dir, pgbin, tag: "t".into(), sub: "10.78.1".into(), log }
    }

    /// The cluster in `dir` (made by [`setup`] or `scripts/pg-auto.sh start`).
    pub fn at(dir: &Path, log: Log) -> Result<Auto> {
        Ok(Auto {
            dir: dir.to_path_buf(),
            pgbin: sys::pgbin()?,
            tag: sys::read(&dir.join("tag"))?,
            sub: sys::read(&dir.join("subnet"))?,
            log,
        })
    }

    fn port(&self, n: &str) -> Result<u16> {
        let p = sys::read(&self.dir.join(n).join("port"))?;
        p.parse().map_err(|_| DbError::failed(format!("reading {}/{n}/port", self.dir.display()), "no port"))
    }

    /// `argv` as postgres in `node`'s namespace (detached in a session of its own with `detach`).
    fn in_node(&self, node: &str, detach: bool, argv: &[OsString]) -> std::process::Command {
        sys::command(&net::node_argv(&self.dir, &self.tag, node, &self.pgbin, detach, argv))
    }

    /// The monitor's view, asked over its private socket (a line per node, by node id).
    pub fn state(&self) -> Result<Vec<NodeState>> {
        let sock = self.dir.join("mon/sock");
        let mut c =
            sys::socket_client(&sock, self.port("mon")?, "autoctl_node", "pg_auto_failover", Duration::from_secs(5))?;
        let sql = "SELECT nodename, reportedstate::text, goalstate::text FROM pgautofailover.node ORDER BY nodeid";
        let rows = c.query(sql, &[]).map_err(|e| DbError::Sql { what: sql.into(), source: e })?;
        Ok(rows.iter().map(|r| NodeState { name: r.get(0), reported: r.get(1), goal: r.get(2) }).collect())
    }

    /// Start `node`'s keeper (`pg_autoctl run`) detached, logging to NODE/keeper.log.
    fn run_keeper(&self, node: &str) -> Result<()> {
        let data = self.dir.join(node).join("data");
        let mut argv = os(&["pg_autoctl", "run", "--pgdata"]);
        argv.push(data.into());
        let mut c = self.in_node(node, true, &argv);
        let log = Log(Some(self.dir.join(node).join("keeper.log")));
        c.stdout(log.stdio()?);
        sys::run(c, &format!("starting {node}'s keeper"), &log).map(|_| ())
    }

    /// Wait until the monitor's view of `node` satisfies `ok` (or `secs` are over).
    fn wait_state(&self, secs: u64, ok: impl Fn(&[NodeState]) -> bool) -> Option<Vec<NodeState>> {
        let mut last = None;
        let done = sys::poll_until(Duration::from_secs(secs), Duration::from_millis(200), || {
            last = self.state().ok();
            last.as_deref().is_some_and(&ok)
        });
        done.then_some(()).and(last)
    }

    fn kill_host(&self, node: &str) -> Result<String> {
        let pids = net::pids(&net::ns(&self.tag, node));
        net::kill_all(&pids);
        let list: Vec<String> = pids.iter().map(i32::to_string).collect();
        sys::write(&self.dir.join(node).join("killed"), &list.join(" "), 0o644)?;
        Ok(format!("killed {node} ({})", list.join(" ")))
    }

    fn start_host(&self, node: &str) -> Result<String> {
        let ns = net::ns(&self.tag, node);
        sys::poll_until(Duration::from_secs(5), Duration::from_millis(100), || net::pids(&ns).is_empty());
        // gone from /proc, not only from the namespace: a zombie not yet
        // reaped passes kill(pid, 0), and pg_autoctl and the postmaster
        // would take their old pidfiles for a live instance
        let killed: Vec<i32> = std::fs::read_to_string(self.dir.join(node).join("killed"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if !sys::poll_until(Duration::from_secs(10), Duration::from_millis(100), || net::gone(&killed)) {
            return Err(DbError::failed(
                format!("starting {node} again"),
                "its killed processes are still in /proc after 10 s",
            ));
        }
        // every process of the host was killed: its pidfiles are stale
        remove_named(&self.dir.join(node).join("run"), "pg_autoctl.pid");
        let _ = std::fs::remove_file(self.dir.join(node).join("killed"));
        self.run_keeper(node)?;
        Ok(format!("started {node}"))
    }

    fn iptables(&self, node: &str, rule: &[&str]) -> Result<()> {
        let ns = net::ns(&self.tag, node);
        let mut argv = vec!["iptables", "-w"];
        argv.extend_from_slice(rule);
        sys::run(net::in_ns(&ns, &argv), &format!("ip netns exec {ns} {}", argv.join(" ")), &self.log).map(|_| ())
    }
}

/// Remove every file called `name` under `dir`.
fn remove_named(dir: &Path, name: &str) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            remove_named(&p, name);
        } else if e.file_name() == name {
            let _ = std::fs::remove_file(&p);
        }
    }
}

impl Db for Auto {
    fn kind(&self) -> Kind {
        Kind::Auto
    }
    fn dir(&self) -> &Path {
        &self.dir
    }
    fn kill(&self) -> Option<&dyn Kill> {
        Some(self)
    }
    fn partition(&self) -> Option<&dyn Partition> {
        Some(self)
    }
    fn primary(&self) -> Option<&dyn Primary> {
        Some(self)
    }
}

impl Kill for Auto {
    /// SIGKILL every process in the node's namespace (the keeper and its PostgreSQL): the host died.
    fn kill(&self, node: &str) -> Result<String> {
        self.kill_host(node)
    }
    /// Start the node's keeper again (it rejoins).
    fn start(&self, node: &str) -> Result<String> {
        self.start_host(node)
    }
}

impl Partition for Auto {
    fn cut(&self, node: &str, cut: Cut) -> Result<String> {
        let mon = net::ip(&self.sub, "mon")?;
        for rule in net::cut_rules(cut, &mon) {
            let mut r = vec!["-A"];
            r.extend(rule.iter().map(String::as_str));
            self.iptables(node, &r)?;
        }
        Ok(format!("partitioned {node} from {}", if cut == Cut::All { "all" } else { "monitor" }))
    }

    fn heal(&self, node: &str) -> Result<String> {
        self.iptables(node, &["-F"])?;
        Ok(format!("healed {node}"))
    }
}

impl Primary for Auto {
    fn primary(&self) -> Result<String> {
        let nodes = self.state()?;
        primary_of(&nodes).map(str::to_string).ok_or_else(|| {
            DbError::failed("asking the monitor for the primary", format!("no single primary: {nodes:?}"))
        })
    }

    fn promote(&self) -> Result<String> {
        Err(DbError::Refused {
            db: Kind::Auto.label(),
            capability: "promote a standby on the harness's word",
            why: "pg_auto_failover's monitor promotes; the harness only breaks nodes and watches",
        })
    }

    /// `pg_autoctl perform switchover` (waits up to 60 s for it).
    fn switchover(&self) -> Result<String> {
        let mut argv = os(&["pg_autoctl", "perform", "switchover", "--pgdata"]);
        argv.push(self.dir.join("mon/data").into());
        argv.extend(os(&["--wait", "60"]));
        let mut c = self.in_node("mon", false, &argv);
        c.stdout(self.log.stdio()?);
        sys::run(c, "pg_autoctl perform switchover", &self.log)?;
        Ok("switched over".into())
    }
}

/// Root, PostgreSQL, pg_autoctl, iptables and ip: what the setup needs.
fn need_tools() -> Result<PathBuf> {
    if !sys::is_root() {
        return Err(DbError::failed(
            "setting up pg_auto_failover's cluster",
            "needs root (network namespaces, veth pairs, iptables); pg_auto_failover itself runs as postgres",
        ));
    }
    let pgbin = sys::pgbin();
    let mut missing = Vec::new();
    if pgbin.is_err() {
        missing.push("postgresql");
    }
    let autoctl = sys::which("pg_autoctl").is_some() || pgbin.as_ref().is_ok_and(|b| b.join("pg_autoctl").is_file());
    for (ok, what) in [
        (autoctl, "pg_autoctl (postgresql-NN-auto-failover)"),
        (sys::which("iptables").is_some(), "iptables"),
        (sys::which("ip").is_some(), "ip (iproute2)"),
    ] {
        if !ok {
            missing.push(what);
        }
    }
    if !missing.is_empty() {
        return Err(sys::missing(&missing));
    }
    pgbin
}

/// The bridge on a free subnet, picked under a lock (several clusters may start at once).
fn bridge(tag: &str) -> Result<String> {
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/dhp-pga-net.lock")
        .map_err(|e| DbError::io("opening", "/tmp/dhp-pga-net.lock", e))?;
    let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| DbError::io("locking", "/tmp/dhp-pga-net.lock", e.into()))?;
    let addrs = sys::run(net::ip_cmd(&["-o", "addr", "show"]), "ip -o addr show", &Log::default())?;
    let sub = net::pick_subnet(&addrs).ok_or_else(|| DbError::failed("picking a subnet", "no free 10.78.K.0/24"))?;
    net::add_bridge(tag, &sub)?;
    Ok(sub)
}

/// Set up a cluster owned by this process (root): the network, the
/// monitor, the nodes one at a time (the first becomes the primary), the
/// client role's password; torn down if any step fails or a signal comes.
pub fn setup() -> Result<Owned> {
    let pgbin = need_tools()?;
    let mut o = Owned::begin(Kind::Auto)?;
    let dir = o.dir.clone();
    // the slowest setup (a minute on a loaded machine): where it is, should anyone need to look
    eprintln!("dhp-chaos: pg_auto_failover cluster directory {}", dir.display());
    let tag = sys::hex(6);
    sys::write(&dir.join("tag"), &format!("{tag}\n"), 0o644)?;
    let pw = sys::password();
    sys::write(&dir.join("pwfile"), &format!("{pw}\n"), 0o600)?;
    sys::write(&dir.join("manager"), "auto\n", 0o644)?;
    let sub = bridge(&tag)?;
    sys::write(&dir.join("subnet"), &format!("{sub}\n"), 0o644)?;
    for n in ALL {
        for d in ["cfg", "share", "run", "sock"] {
            std::fs::create_dir_all(dir.join(n).join(d))
                .map_err(|e| DbError::io("creating", dir.join(n).join(d), e))?;
        }
        sys::write(&dir.join(n).join("port"), &format!("{}\n", sys::free_port()?), 0o644)?;
        sys::write(&dir.join(n).join("host"), &format!("{}\n", net::ip(&sub, n)?), 0o644)?;
        net::add_ns(&tag, &sub, n)?;
    }
    sys::chown_postgres(&dir)?;
    nix::unistd::chown(&dir.join("pwfile"), Some(nix::unistd::Uid::from_raw(0)), Some(nix::unistd::Gid::from_raw(0)))
        .map_err(|e| DbError::io("chown", dir.join("pwfile"), e.into()))?;
    for n in ALL {
        std::fs::set_permissions(dir.join(n).join("sock"), std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .map_err(|e| DbError::io("chmod", dir.join(n).join("sock"), e))?;
    }
    let a = Auto { dir: dir.clone(), pgbin, tag, sub: sub.clone(), log: Log::default() };
    create_monitor(&a)?;
    for n in ["n0", "n1", "n2"] {
        create_node(&a, n)?;
    }
    let whole2 = |s: &[NodeState]| {
        let p = s.iter().filter(|x| x.reported == x.goal && x.goal == "primary").count();
        let q = s.iter().filter(|x| x.reported == x.goal && x.goal == "secondary").count();
        (p, q) == (1, 2)
    };
    if a.wait_state(60, whole2).is_none() {
        return Err(DbError::failed("waiting for the formation", format!("not whole after 60 s: {:?}", a.state())));
    }
    let n0_port = a.port("n0")?;
    let mut c = sys::socket_client(&dir.join("n0/sock"), n0_port, "postgres", "dhp", Duration::from_secs(10))?;
    // a protocol message, not an argv /proc would show
    sys::exec(&mut c, &[&format!("ALTER ROLE postgres PASSWORD '{pw}'")])?;
    // the password must work over TCP, or the clients cannot connect
    let n0 = net::ip(&sub, "n0")?;
    let probe = format!("postgres://postgres:{pw}@{n0}:{n0_port}/dhp?connect_timeout=3");
    postgres::Client::connect(&probe, postgres::NoTls)
        .map_err(|e| DbError::Sql { what: "the client role cannot log in over TCP".into(), source: e })?;
    let hosts: Vec<(String, u16)> =
        ["n0", "n1", "n2"].iter().map(|n| Ok((net::ip(&sub, n)?, a.port(n)?))).collect::<Result<_>>()?;
    o.url = super::cluster::url(&pw, &hosts);
    Ok(o)
}

fn create_monitor(a: &Auto) -> Result<()> {
    let d = a.dir.join("mon");
    let mut argv = os(&["pg_autoctl", "create", "monitor", "--pgdata"]);
    argv.push(d.join("data").into());
    argv.extend(os(&["--pgport", &a.port("mon")?.to_string(), "--hostname", &net::ip(&a.sub, "mon")?]));
    argv.extend(os(&["--no-ssl", "--skip-pg-hba"]));
    sys::run_logged(a.in_node("mon", false, &argv), "pg_autoctl create monitor", &d.join("create.log"), false)?;
    sys::write(&d.join("data/pg_hba.conf"), &net::hba(&a.sub), 0o600)?;
    sys::append(&d.join("data/postgresql.auto.conf"), MONITOR_CONF)?;
    a.run_keeper("mon")?;
    sys::poll_until(Duration::from_secs(30), Duration::from_millis(200), || a.state().is_ok());
    Ok(())
}

/// Create node `n` and start its keeper; wait until the monitor has it in place.
fn create_node(a: &Auto, n: &str) -> Result<()> {
    let d = a.dir.join(n);
    let mon_uri = format!(
        "postgres://autoctl_node@{}:{}/pg_auto_failover?sslmode=disable",
        net::ip(&a.sub, "mon")?,
        a.port("mon")?
    );
    let mut argv = os(&["pg_autoctl", "create", "postgres", "--pgdata"]);
    argv.push(d.join("data").into());
    argv.extend(os(&["--pgport", &a.port(n)?.to_string(), "--hostname", &net::ip(&a.sub, n)?, "--pghost"]));
    argv.push(d.join("sock").into());
    argv.extend(os(&["--name", n, "--dbname", "dhp", "--no-ssl", "--skip-pg-hba", "--monitor", &mon_uri]));
    let log = d.join("create.log");
    sys::run_logged(a.in_node(n, false, &argv), &format!("pg_autoctl create postgres ({n})"), &log, false)?;
    let mut argv = os(&["pg_autoctl", "config", "set", "--pgdata"]);
    argv.push(d.join("data").into());
    argv.extend(os(&["timeout.network_partition_timeout", "3"]));
    sys::run_logged(a.in_node(n, false, &argv), "pg_autoctl config set", &log, true)?;
    if n == "n0" {
        sys::write(&d.join("data/pg_hba.conf"), &net::hba(&a.sub), 0o600)?;
    }
    a.run_keeper(n)?;
    // one node at a time: the first becomes the primary, the others its standbys
    let placed = ["single", "primary", "secondary"];
    a.wait_state(60, |s| {
        s.iter().any(|x| x.name == n && placed.contains(&x.reported.as_str()) && placed.contains(&x.goal.as_str()))
    });
    Ok(())
}

/// Kill every process of the cluster in `dir`, remove its namespaces and
/// links, and `dir` if it is one of ours.
pub fn stop(dir: &Path) {
    if let Ok(tag) = sys::read(&dir.join("tag")) {
        let mut all = Vec::new();
        for n in ["n0", "n1", "n2", "mon"] {
            let pids = net::pids(&net::ns(&tag, n));
            net::kill_all(&pids);
            all.extend(pids);
        }
        // gone from /proc (reaped), or a namespace may still be held
        sys::poll_until(Duration::from_secs(5), Duration::from_millis(100), || net::gone(&all));
        for n in ["n0", "n1", "n2", "mon"] {
            sys::quiet(net::ip_cmd(&["link", "del", &format!("da{tag}{n}")]));
            sys::quiet(net::ip_cmd(&["netns", "del", &net::ns(&tag, n)]));
        }
        sys::quiet(net::ip_cmd(&["link", "del", &format!("da{tag}br")]));
    }
    if sys::ours(dir, Kind::Auto.prefix()) {
        let _ = std::fs::remove_dir_all(dir);
    }
}
