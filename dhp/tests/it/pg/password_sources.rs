//! The password of a PostgreSQL store need not be in the URL (and so in
//! every process's argv): as libpq, `dhp` takes it from `PGPASSWORD`, else
//! from the password file — `passfile=` of the URL, else `PGPASSFILE`,
//! else `~/.pgpass` — whose lines are `host:port:db:user:password` with
//! `*` wildcards and `\` escapes. A password file that its group or
//! others may read is ignored with a warning, as libpq does.
use crate::pg_support;

use crate::common::dhp;
use std::os::unix::fs::PermissionsExt;

/// (the test server's URL without its password, the password, host, port, db, user)
fn parts() -> (String, String, String, String, String, String) {
    let url = pg_support::base_url();
    let (scheme, rest) = url.split_once("://").unwrap();
    let (auth, tail) = rest.split_once('@').expect("test URL has credentials");
    let (user, pw) = auth.split_once(':').expect("test URL has a password");
    let (hostport, db) = tail.split_once('/').unwrap();
    let db = db.split('?').next().unwrap();
    let (host, port) = hostport.rsplit_once(':').unwrap();
    (format!("{scheme}://{user}@{tail}"), pw.into(), host.into(), port.into(), db.into(), user.into())
}

fn with_schema(url: &str, schema: &str) -> String {
    pg_support::with_schema(url, schema)
}

fn dispatch(url: &str, env: &[(&str, &str)]) -> (i32, String) {
    let (code, v, err) = dhp(&["dispatch", url, "--kind", "t", "--schema", "{}"], env);
    (code, format!("{v} {err}"))
}

fn schema(tag: &str) -> String {
    format!("t_pwsrc_{tag}_{}", std::process::id())
}

#[test]
fn pgpassword_and_password_files_stand_in_for_the_url_password() {
    let (bare, pw, host, port, db, user) = parts();
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_str().unwrap();
    // no password anywhere: the server refuses
    let (code, out) = dispatch(&with_schema(&bare, &schema("none")), &[("HOME", h)]);
    assert_eq!(code, 11, "{out}");
    assert!(out.contains("password"), "{out}");

    // PGPASSWORD
    let (code, out) = dispatch(&with_schema(&bare, &schema("env")), &[("HOME", h), ("PGPASSWORD", &pw)]);
    assert_eq!(code, 0, "{out}");

    // passfile= of the URL: a wildcard line after a non-matching one; an
    // escaped ':' in the host field of an earlier line matches nothing
    let file = home.path().join("pass file");
    let text = format!("# comment\n{host}:{port}:other_db:{user}:wrong\nx\\:y:*:*:*:wrong\n*:{port}:{db}:*:{pw}\n");
    std::fs::write(&file, text).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let enc = file.to_str().unwrap().replace('%', "%25").replace(' ', "%20").replace('/', "%2F");
    let url = format!("{}&passfile={enc}", with_schema(&bare, &schema("file")));
    let (code, out) = dispatch(&url, &[("HOME", h)]);
    assert_eq!(code, 0, "{out}");

    // PGPASSFILE, and ~/.pgpass
    let (code, out) =
        dispatch(&with_schema(&bare, &schema("pgpassfile")), &[("HOME", h), ("PGPASSFILE", file.to_str().unwrap())]);
    assert_eq!(code, 0, "{out}");
    std::fs::copy(&file, home.path().join(".pgpass")).unwrap();
    std::fs::set_permissions(home.path().join(".pgpass"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let (code, out) = dispatch(&with_schema(&bare, &schema("home")), &[("HOME", h)]);
    assert_eq!(code, 0, "{out}");

    // group- or world-readable: ignored, with libpq's warning
    for mode in [0o640, 0o604] {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        let empty_home = tempfile::tempdir().unwrap();
        let (code, out) = dispatch(&url, &[("HOME", empty_home.path().to_str().unwrap())]);
        assert_eq!(code, 11, "mode {mode:o}: {out}");
        assert!(out.contains("group or world access"), "mode {mode:o}: {out}");
    }

    // a URL password wins over PGPASSWORD
    let (code, out) = dispatch(&with_schema(&pg_support::base_url(), &schema("urlwins")), &[("PGPASSWORD", "wrong")]);
    assert_eq!(code, 0, "{out}");
}
