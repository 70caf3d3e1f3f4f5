//! A run on an existing PostgreSQL server (`--store postgres://u:PW@…`):
//! no file it writes holds the password (results.json used to keep the
//! whole command line), and two runs of the same seed on the same server
//! get a schema each instead of mixing their handoffs in one.
use crate::common::*;

fn all_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.is_dir() {
            all_files(&p, out);
        } else if meta.is_file() {
            out.push(p);
        }
    }
}

fn schemas(url: &str, seed: u64) -> Vec<String> {
    let mut c = postgres::Client::connect(url, postgres::NoTls).expect("connecting to the test server");
    let like = format!("chaos_{seed:016x}_0%");
    c.query("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE $1 ORDER BY 1", &[&like])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn no_file_of_a_postgres_run_holds_its_password_and_runs_do_not_share_a_schema() {
    let url = dhp_kit::pg_url();
    let (_, rest) = url.split_once("://").unwrap();
    let userinfo = rest.split_once('@').expect("the test URL has user:password@").0;
    let secret = userinfo.split_once(':').expect("the test URL has a password").1.to_string();
    assert!(secret.len() >= 6, "a password worth grepping for: {secret:?}");
    let seed: u64 = 0x5ec0_0000 + u64::from(std::process::id());
    let args = [
        "--allow-uncovered",
        "all",
        "--store",
        url.as_str(),
        "--seed",
        &seed.to_string(),
        "--handoffs",
        "1",
        "--dlq-handoffs",
        "0",
    ];
    let args: Vec<&str> =
        args.into_iter().chain(["--chunks", "40", "--fault-seconds", "10", "--faults", "kill-worker=1"]).collect();
    assert!(schemas(&url, seed).is_empty());
    let a = run_chaos("pg-secret-a", &args);
    assert_eq!(a.code, 0, "{}", a.dump());
    let mut files = Vec::new();
    all_files(&a.out, &mut files);
    assert!(files.iter().any(|f| f.ends_with("results.json")), "{files:?}");
    for f in &files {
        let text = String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned();
        assert!(!text.contains(&secret), "{} holds the password", f.display());
    }
    assert!(a.results["command"].to_string().contains("***"), "{}", a.results["command"]);
    assert!(!a.stdout.contains(&secret) && !a.stderr.contains(&secret), "{}", a.dump());

    // the same seed again on the same server: a schema of its own
    let b = run_chaos("pg-secret-b", &args);
    assert_eq!(b.code, 0, "{}", b.dump());
    let s = schemas(&url, seed);
    assert_eq!(s.len(), 2, "two runs of seed {seed}, a schema each: {s:?}");
    for r in [&a, &b] {
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(r.out.join("round-0000/round.json")).unwrap()).unwrap();
        assert_eq!(meta["hids"].as_array().map(Vec::len), Some(1), "{meta}");
    }
}
