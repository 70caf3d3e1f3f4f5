//! The parts of the control plane that need no root and no server:
//! argument and URL building, layouts, capability refusals.

use super::*;
use std::ffi::OsString;

fn strs(v: &[OsString]) -> Vec<String> {
    v.iter().map(|s| s.to_string_lossy().into_owned()).collect()
}

#[test]
fn urls_are_the_scripts() {
    assert_eq!(single::url("dhp-ab", 5433), "postgres://postgres:dhp-ab@127.0.0.1:5433/dhp");
    let hosts = [("127.0.0.1".to_string(), 1), ("127.0.0.1".to_string(), 2), ("10.78.3.5".to_string(), 3)];
    assert_eq!(
        cluster::url("pw", &hosts),
        "postgres://postgres:pw@127.0.0.1:1,127.0.0.1:2,10.78.3.5:3/dhp?target_session_attrs=read-write"
    );
    assert_eq!(cluster::conninfo(7, "pw", "n1"), "host=127.0.0.1 port=7 user=postgres password=pw application_name=n1");
}

#[test]
fn server_options_and_initdb_arguments() {
    let dir = Path::new("/tmp/dhp-pg.x");
    let o = single::server_opts(dir, 5999, "");
    assert!(o.starts_with("-c port=5999 -c listen_addresses=127.0.0.1 -c unix_socket_directories=/tmp/dhp-pg.x"));
    assert!(o.contains("-c fsync=on") && o.contains("-c synchronous_commit=on") && o.ends_with("max_connections=400"));
    let knobs = single::commit_knobs(Some("100"), None);
    assert_eq!(knobs, " -c commit_delay=100");
    assert!(single::server_opts(dir, 1, &knobs).ends_with("max_connections=400 -c commit_delay=100"));
    assert_eq!(single::commit_knobs(Some(""), Some("7")), " -c commit_siblings=7");
    let a = strs(&single::initdb_args(Path::new("/d/data"), Path::new("/d/pwfile")));
    assert_eq!(a[..5], ["-D", "/d/data", "-U", "postgres", "--pwfile=/d/pwfile"]);
    assert!(a.contains(&"--auth-local=trust".into()) && a.contains(&"--auth-host=scram-sha-256".into()));
    let n = cluster::node_opts(Path::new("/tmp/dhp-pgc.y"), "n2", 7000);
    assert!(n.contains("unix_socket_directories=/tmp/dhp-pgc.y/n2") && n.contains("cluster_name=n2"));
    assert!(n.contains("wal_sender_timeout=5s") && n.contains("wal_level=replica"));
}

#[test]
fn synchronous_names_and_roles() {
    assert_eq!(cluster::sync_names("sync", "n1"), "FIRST 1 (n1)");
    assert_eq!(cluster::sync_names("async", "n1"), "");
    assert_eq!(cluster::parse_roles("n1 n2 n0\n"), Some(("n1".into(), "n2".into(), "n0".into())));
    assert_eq!(cluster::parse_roles("n1 n2"), None);
    assert_eq!(cluster::parse_roles("n1 n2 n0 n3"), None);
}

#[test]
fn the_owner_runs_the_servers_when_root() {
    let p = Path::new("/usr/lib/postgresql/15/bin/pg_ctl");
    assert_eq!(
        strs(&sys::owner_argv(true, p)),
        ["runuser", "-u", "postgres", "--", "/usr/lib/postgresql/15/bin/pg_ctl"]
    );
    assert_eq!(strs(&sys::owner_argv(false, p)), ["/usr/lib/postgresql/15/bin/pg_ctl"]);
    assert_eq!(sys::version_key(Path::new("/usr/lib/postgresql/15/bin")), [15]);
    assert!(sys::version_key(Path::new("/usr/lib/postgresql/9.6/bin")) < sys::version_key(Path::new("/x/16/bin")));
}

#[test]
fn only_our_directories_are_removed() {
    assert!(sys::ours(Path::new("/tmp/dhp-pg.AbC123"), "dhp-pg"));
    assert!(!sys::ours(Path::new("/tmp/dhp-pgc.AbC123"), "dhp-pg"));
    assert!(!sys::ours(Path::new("/home/me/data"), "dhp-pg"));
    assert!(!sys::ours(Path::new("/tmp/dhp-pg.x/../../etc"), "dhp-pg"));
}

#[test]
fn pg_auto_failover_network() {
    assert_eq!(auto_net::ns("a1b2c3", "n0"), "dhpauto-a1b2c3-n0");
    assert_eq!(auto_net::ip("10.78.4", "mon").unwrap(), "10.78.4.2");
    assert_eq!(auto_net::ip("10.78.4", "n2").unwrap(), "10.78.4.5");
    assert!(auto_net::ip("10.78.4", "n3").is_err());
    let addrs = "1: lo    inet 127.0.0.1/8 scope host lo\n5: da1br    inet 10.78.1.1/24 brd 10.78.1.255\n";
    assert_eq!(auto_net::pick_subnet(addrs).as_deref(), Some("10.78.2"));
    assert_eq!(auto_net::pick_subnet("").as_deref(), Some("10.78.1"));
    let hba = auto_net::hba("10.78.9");
    assert!(hba.starts_with("local all all trust\n"));
    assert!(hba.contains("host replication pgautofailover_replicator 10.78.9.5/32 trust"));
    // the root namespace (K.1) gets no trusted role, only postgres with a password
    assert!(!hba.contains("10.78.9.1/32"));
    assert!(hba.ends_with("host all postgres 10.78.9.0/24 scram-sha-256\n"));
    let [i, o] = auto_net::cut_rules(Cut::Monitor, "10.78.9.2");
    assert_eq!(i, ["INPUT", "-i", "eth0", "-s", "10.78.9.2", "-j", "DROP"]);
    assert_eq!(o, ["OUTPUT", "-o", "eth0", "-d", "10.78.9.2", "-j", "DROP"]);
    let [i, _] = auto_net::cut_rules(Cut::All, "10.78.9.2");
    assert_eq!(i, ["INPUT", "-i", "eth0", "-j", "DROP"]);
    let argv = strs(&auto_net::node_argv(
        Path::new("/tmp/dhp-pga.z"),
        "t",
        "n1",
        Path::new("/pg/bin"),
        true,
        &["pg_autoctl".into(), "run".into()],
    ));
    assert_eq!(argv[..8], ["ip", "netns", "exec", "dhpauto-t-n1", "setsid", "-f", "runuser", "-u"]);
    assert!(argv.contains(&"PATH=/pg/bin:/usr/bin:/bin".into()));
    assert!(argv.contains(&"PGHOST=/tmp/dhp-pga.z/n1/sock".into()));
    assert!(argv.contains(&"XDG_CONFIG_HOME=/tmp/dhp-pga.z/n1/cfg".into()));
    assert_eq!(argv[argv.len() - 2..], ["pg_autoctl", "run"]);
}

#[test]
fn the_monitors_view() {
    let n = |name: &str, r: &str, g: &str| auto::NodeState { name: name.into(), reported: r.into(), goal: g.into() };
    let nodes = [n("n0", "primary", "primary"), n("n1", "secondary", "secondary"), n("n2", "secondary", "secondary")];
    assert_eq!(auto::primary_of(&nodes), Some("n0"));
    assert!(auto::whole(&nodes));
    let demoting = [n("n0", "primary", "demote_timeout"), n("n1", "secondary", "prepare_promotion")];
    assert_eq!(auto::primary_of(&demoting), None);
    assert!(!auto::whole(&demoting));
    let catching_up = [n("n0", "primary", "primary"), n("n1", "catchingup", "secondary")];
    assert!(!auto::whole(&catching_up));
}

/// A database of each kind with no processes behind it: what each offers
/// is a matter of its type, asked without a server.
fn open_fake(kind: Kind) -> Box<dyn Db> {
    let (dir, pgbin, log) = (PathBuf::from("/nonexistent"), PathBuf::from("/nonexistent/bin"), sys::Log::default());
    match kind {
        Kind::Single => Box::new(single::Single::fake(dir, pgbin, log)),
        Kind::Cluster => Box::new(cluster::Cluster::fake(dir, pgbin, log)),
        Kind::Auto => Box::new(auto::Auto::fake(dir, pgbin, log)),
    }
}

#[test]
fn a_missing_capability_is_refused_by_name() {
    let single = open_fake(Kind::Single);
    assert!(kill_of(single.as_ref()).is_ok());
    for e in [
        partition_of(single.as_ref()).err().map(|e| e.to_string()),
        primary_of(single.as_ref()).err().map(|e| e.to_string()),
        pause_of(single.as_ref()).err().map(|e| e.to_string()),
    ] {
        let e = e.expect("refused");
        assert!(e.starts_with("the single PostgreSQL server cannot "), "{e}");
    }
    let c = open_fake(Kind::Cluster);
    assert!(kill_of(c.as_ref()).is_ok() && primary_of(c.as_ref()).is_ok());
    let e = partition_of(c.as_ref()).err().expect("refused").to_string();
    assert!(e.contains("harness-promoted cluster cannot cut a node's links"), "{e}");
    let e = kill_of(c.as_ref()).unwrap().start("n0").expect_err("refused").to_string();
    assert!(e.contains("fenced"), "{e}");
    let a = open_fake(Kind::Auto);
    assert!(kill_of(a.as_ref()).is_ok() && partition_of(a.as_ref()).is_ok());
    let e = primary_of(a.as_ref()).unwrap().promote().expect_err("refused").to_string();
    assert!(e.contains("pg_auto_failover cluster cannot promote") && e.contains("monitor promotes"), "{e}");
    assert!(pause_of(a.as_ref()).is_err() && pause_of(c.as_ref()).is_err());
}

#[test]
fn a_missing_program_names_the_installer() {
    let e = sys::missing(&["pg_autoctl (postgresql-NN-auto-failover)", "iptables"]).to_string();
    assert_eq!(e, "missing pg_autoctl (postgresql-NN-auto-failover), iptables: run scripts/services.sh as root (it installs them)");
    // a program that is not there, when a step runs it
    let c = std::process::Command::new("dhp-no-such-program-anywhere");
    let e = sys::run(c, "a step", &sys::Log::default()).unwrap_err().to_string();
    assert_eq!(e, "missing dhp-no-such-program-anywhere: run scripts/services.sh as root (it installs them)");
    // DHP_PGBIN pointing nowhere falls back to the packages, and without them names the script
    if !Path::new("/usr/lib/postgresql").exists() {
        assert!(sys::pgbin().unwrap_err().to_string().contains("scripts/services.sh"));
    }
}

#[test]
fn kinds_round_trip() {
    for k in [Kind::Single, Kind::Cluster, Kind::Auto] {
        assert_eq!(Kind::parse(k.name()), Some(k));
        assert!(k.prefix().starts_with("dhp-pg"));
    }
    assert_eq!(Kind::parse("patroni"), None);
}
