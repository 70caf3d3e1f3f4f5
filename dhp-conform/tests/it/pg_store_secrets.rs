//! A PostgreSQL `--store` password never reaches what dhp-conform prints
//! or writes — its stderr, the JSON summary, the HTML report — in any of
//! libpq's forms (here `?password=`, which used to be printed in clear,
//! also inside an adapter's stderr kept with a failure). A connection the
//! server refuses is explained: its message and what to do, not "db error";
//! one that accepts and never answers is given up on.
use crate::common::*;
use crate::pg_common;

/// `postgres://user:pw@rest` → (`postgres://user@rest?password=pw`, pw).
fn query_password(url: &str) -> (String, String) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (auth, tail) = rest.split_once('@').expect("test URL has credentials");
    let (user, pw) = auth.split_once(':').expect("test URL has a password");
    let sep = if tail.contains('?') { '&' } else { '?' };
    (format!("{scheme}://{user}@{tail}{sep}password={pw}"), pw.to_string())
}

#[test]
fn a_query_parameter_password_is_in_no_output() {
    let db = pg_common::FreshDb::new("secrets");
    let (url, pw) = query_password(&db.url);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_string_lossy().into_owned();
    // a mutant that fails one assertion and logs every request (which
    // carries the store's URL) on its stderr, kept with the failure
    let cmd = mutant_adapter("ack-before-complete", "--log-requests");
    let run =
        conform(&["--impl", &cmd, "--store", &url, "ack-after-complete", "--exact", "--html", &d, "--format", "json"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert!(run.stdout.contains("password=***"), "the JSON names the store, masked: {}", run.stdout);
    for (what, text) in [("stderr", &run.stderr), ("JSON summary", &run.stdout), ("HTML report", &html)] {
        assert!(!text.contains(&pw), "the password is in dhp-conform's {what}:\n{text}");
    }
}

#[test]
fn a_refused_connection_says_why_and_what_to_do() {
    let db = pg_common::FreshDb::new("refused");
    let (scheme, rest) = db.url.split_once("://").unwrap();
    let (auth, tail) = rest.split_once('@').unwrap();
    let user = auth.split(':').next().unwrap();
    let wrong = format!("{scheme}://{user}:not-the-password@{tail}");
    let run = conform(&["--store", &wrong, "no-crossed-inputs", "--exact"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("password authentication failed"), "{}", run.stderr);
    assert!(run.stderr.contains("PGPASSWORD"), "what to do: {}", run.stderr);
    assert!(!run.stderr.contains("not-the-password"), "{}", run.stderr);

    let (head, _) = db.url.rsplit_once('/').unwrap();
    let missing = format!("{head}/no_such_db_here");
    let run = conform(&["--store", &missing, "no-crossed-inputs", "--exact"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("database \"no_such_db_here\" does not exist"), "{}", run.stderr);
    assert!(run.stderr.contains("create the database"), "what to do: {}", run.stderr);
}

/// The password need not be on dhp-conform's command line either:
/// `PGPASSWORD` serves its own connections and, inherited, its adapters'.
#[test]
fn pgpassword_stands_in_for_the_url_password() {
    let db = pg_common::FreshDb::new("pgpassword");
    let (scheme, rest) = db.url.split_once("://").unwrap();
    let (auth, tail) = rest.split_once('@').unwrap();
    let (user, pw) = auth.split_once(':').unwrap();
    let bare = format!("{scheme}://{user}@{tail}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dhp-conform"))
        .args(["--store", &bare, "no-crossed-inputs", "--exact", "--format", "json"])
        .env("DHP_PYTHON", python())
        .env("PGPASSWORD", pw)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("\"passed\":1") || stdout.contains("\"passed\": 1"), "{stdout}");
    assert_eq!(db.runner_schemas(), Vec::<String>::new(), "its schema was dropped: the runner connected too");
}

/// A server that accepts and never answers: the `--store` check gives up
/// after the connect timeout instead of hanging.
#[test]
fn a_silent_server_is_given_up_on() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming().flatten() {
            held.push(c);
        }
    });
    let url = format!("postgres://u:p@{addr}/db?connect_timeout=2");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dhp-conform"))
        .args(["--store", &url, "no-crossed-inputs", "--exact"])
        .env("DHP_PYTHON", python())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            panic!("dhp-conform still waits on a silent server after {:?}", t.elapsed());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no answer within 2.0 s"), "{err}");
}
