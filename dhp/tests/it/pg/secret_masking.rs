//! No secret of a PostgreSQL location is printed: a password given as
//! libpq's `?password=` query parameter (or `sslpassword=`, or in a
//! `key=value` connection string) is masked in every `dhp` error that
//! names the store — on stderr and in `--json` output — as the
//! `user:pw@` form always was.
use crate::common::dhp;
use crate::pg_support::{base_url, fresh_url, sql};

/// `postgres://user:pw@rest` → (`postgres://user@rest`, `pw`).
fn split_password(url: &str) -> (String, Option<String>) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (auth, host) = rest.split_once('@').expect("test URL has credentials");
    let (user, pw) = auth.split_once(':').expect("test URL has a password");
    (format!("{scheme}://{user}@{host}"), Some(pw.to_string()))
}

const SECRET: &str = "Zq7-sekrit-Pw";

/// The test server's URL with its password moved to `?password=VALUE`.
fn query_password_url(value: &str, extra: &str) -> String {
    let (bare, _) = split_password(&base_url());
    let sep = if bare.contains('?') { '&' } else { '?' };
    format!("{bare}{sep}password={value}{extra}")
}

fn assert_masked(what: &str, code: i32, v: &serde_json::Value, err: &str) {
    assert_ne!(code, 0, "{what}: expected a failure: {v} {err}");
    assert!(!err.contains(SECRET), "{what}: the password is printed on stderr: {err}");
    assert!(!v.to_string().contains(SECRET), "{what}: the password is printed in --json: {v}");
}

#[test]
fn query_parameter_passwords_are_masked_in_every_error() {
    // the right password, as a query parameter: errors that name the store
    let (_, real) = split_password(&base_url());
    let real = real.expect("the test server's URL has a password");
    let url = fresh_url("mask");
    let schema = url.rsplit_once("schema=").unwrap().1.to_string();
    sql(&base_url(), &format!("CREATE SCHEMA {schema}; CREATE TABLE {schema}.invoices (id int)"));
    // `real` is the secret here: check for it, not SECRET
    let with_real = query_password_url(&real, &format!("&schema={schema}"));
    for args in [vec!["status", &with_real], vec!["dispatch", &with_real, "--kind", "t", "--schema", "{}"]] {
        let (code, v, err) = dhp(&args, &[]);
        assert_eq!(code, 11, "{args:?}: {err}");
        assert!(err.contains("not a DHP store") && err.contains("password=***"), "{err}");
        assert!(!err.contains(&real) && !v.to_string().contains(&real), "{args:?} prints the password: {err} {v}");
    }

    // a wrong password: the connection error names the target, not the secret
    let wrong = query_password_url(SECRET, "&schema=t_mask_wrong");
    let (code, v, err) = dhp(&["status", &wrong], &[]);
    assert_eq!(code, 11, "{err}");
    assert!(err.contains("password authentication failed"), "{err}");
    assert_masked("wrong password", code, &v, &err);

    // a bad URL: the location error repeats the input, masked
    let bad = query_password_url(SECRET, "&sslmode=sometimes");
    let (code, v, err) = dhp(&["status", &bad], &[]);
    assert!(err.contains("sslmode=sometimes") && err.contains("password=***"), "{err}");
    assert_masked("bad sslmode", code, &v, &err);

    // an option the client library refuses, carrying a secret of its own
    let ssl_pw = format!("{}&sslpassword={SECRET}", query_password_url("x", ""));
    let (code, v, err) = dhp(&["status", &ssl_pw], &[]);
    assert_masked("sslpassword", code, &v, &err);

    // a user-info password in a URL of another scheme
    let other = format!("mysql://me:{SECRET}@h/db");
    let (code, v, err) = dhp(&["status", &other], &[]);
    assert_masked("other scheme", code, &v, &err);

    // a libpq key=value string is no store location (a directory name):
    // whatever the error, its password is masked
    let kv = format!("host=127.0.0.1 password={SECRET} dbname=dhp");
    let (code, v, err) = dhp(&["status", &kv], &[]);
    assert_masked("key=value", code, &v, &err);
}
