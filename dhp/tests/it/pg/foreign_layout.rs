//! A PostgreSQL schema that is not a complete DHP store is "not a DHP
//! store" for every command, and nothing is written there: an
//! application's own `schema_version` table (a common migration-tool
//! name), a partial or altered DHP layout, a DHP-shaped `schema_version`
//! at another version. A missing or empty schema still becomes a new
//! store for the commands that create one.
use crate::common::dhp;
use crate::pg_support::{base_url, fresh_url, sql};

const DISPATCH: &[&str] = &["--kind", "t", "--schema", "{}"];

fn schema_of(url: &str) -> String {
    url.rsplit_once("schema=").unwrap().1.to_string()
}

/// Every relation and function in the schema, and the rows of its
/// `schema_version` table: what must not change.
fn snapshot(schema: &str) -> Vec<Option<String>> {
    let mut s = sql(
        &base_url(),
        &format!(
            "SELECT string_agg(x, ',' ORDER BY x) FROM (
               SELECT 'rel:' || c.relname AS x FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = '{schema}'
               UNION ALL SELECT 'fn:' || p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                 WHERE n.nspname = '{schema}') t"
        ),
    );
    s.extend(sql(&base_url(), &format!("SELECT count(*)::text FROM {schema}.schema_version")));
    s
}

fn refused_untouched(url: &str, want: &str) {
    let schema = schema_of(url);
    let before = snapshot(&schema);
    let mut dispatch = vec!["dispatch", url];
    dispatch.extend_from_slice(DISPATCH);
    for args in [vec!["status", url], dispatch, vec!["status", url, "--limit", "5"]] {
        let (code, v, err) = dhp(&args, &[]);
        assert_eq!(code, 11, "{args:?}: {v} {err}");
        assert_eq!(v["error_kind"], "StoreError", "{v}");
        assert!(err.contains("not a DHP store") && err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("does not exist (42"), "a clear message, not a failed statement: {err}");
        assert_eq!(snapshot(&schema), before, "{args:?} wrote into the schema");
    }
}

#[test]
fn an_applications_own_schema_version_table_is_left_alone() {
    // the migration tool's table, at its version 1
    let url = fresh_url("appver");
    let schema = schema_of(&url);
    sql(
        &base_url(),
        &format!(
            "CREATE SCHEMA {schema};
             CREATE TABLE {schema}.schema_version (version BIGINT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL);
             INSERT INTO {schema}.schema_version VALUES (1, 0);
             CREATE TABLE {schema}.customers (id int)"
        ),
    );
    refused_untouched(&url, "version 1");

    // a flyway-style table of another shape
    let url = fresh_url("flyway");
    let schema = schema_of(&url);
    sql(
        &base_url(),
        &format!(
            "CREATE SCHEMA {schema};
             CREATE TABLE {schema}.schema_version (installed_rank int, version text, script text);
             INSERT INTO {schema}.schema_version VALUES (1, '1', 'V1__init.sql')"
        ),
    );
    refused_untouched(&url, "schema_version");
}

#[test]
fn a_partial_or_altered_layout_is_not_a_store() {
    // a store whose handoffs table lost a column: a clear message, not
    // "column status does not exist"
    let url = fresh_url("altered");
    let schema = schema_of(&url);
    let mut args = vec!["dispatch", url.as_str()];
    args.extend_from_slice(DISPATCH);
    let (code, _, err) = dhp(&args, &[]);
    assert_eq!(code, 0, "{err}");
    sql(&base_url(), &format!("ALTER TABLE {schema}.handoffs DROP COLUMN status"));
    refused_untouched(&url, "handoffs.status is missing");

    // DHP's version row, but tables missing
    let url = fresh_url("partial");
    let schema = schema_of(&url);
    sql(
        &base_url(),
        &format!(
            "CREATE SCHEMA {schema};
             CREATE TABLE {schema}.schema_version (version BIGINT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL);
             INSERT INTO {schema}.schema_version VALUES (3, 0);
             CREATE TABLE {schema}.handoffs (hid text, envelope_json text)"
        ),
    );
    refused_untouched(&url, "no table");

    // an empty schema_version: never a store
    let url = fresh_url("emptyver");
    let schema = schema_of(&url);
    sql(
        &base_url(),
        &format!(
            "CREATE SCHEMA {schema};
             CREATE TABLE {schema}.schema_version (version BIGINT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
        ),
    );
    refused_untouched(&url, "schema_version is empty");
}

#[test]
fn missing_and_empty_schemas_still_become_stores() {
    let missing = fresh_url("newmissing");
    let empty = fresh_url("newempty");
    sql(&base_url(), &format!("CREATE SCHEMA {}", schema_of(&empty)));
    for url in [&missing, &empty] {
        let mut args = vec!["dispatch", url.as_str()];
        args.extend_from_slice(DISPATCH);
        let (code, v, err) = dhp(&args, &[]);
        assert_eq!(code, 0, "{err}");
        assert!(v["hid"].is_string(), "{v}");
        let (code, v, err) = dhp(&["status", url, v["hid"].as_str().unwrap()], &[]);
        assert_eq!(code, 0, "{v} {err}");
        let (code, _, err) = dhp(&["status", url], &[]);
        assert_eq!(code, 0, "a complete store opens as is: {err}");
    }
}

#[test]
fn an_older_dhp_store_is_upgraded_in_place() {
    // a store at v2 (PROTOCOL §3.1: v1/v2 lack only tables v3 added): any
    // command brings it to v3 and keeps its handoffs
    let url = fresh_url("olderdhp");
    let schema = schema_of(&url);
    let mut args = vec!["dispatch", url.as_str()];
    args.extend_from_slice(DISPATCH);
    let (code, v, err) = dhp(&args, &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap().to_string();
    sql(
        &base_url(),
        &format!(
            "DELETE FROM {schema}.schema_version; INSERT INTO {schema}.schema_version VALUES (2, 0);
             DROP TABLE {schema}.progress; DROP TABLE {schema}.capability_audit"
        ),
    );
    let (code, v, err) = dhp(&["status", &url, &hid], &[]);
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["status"], "pending", "{v}");
    let version = sql(&base_url(), &format!("SELECT max(version)::text FROM {schema}.schema_version"));
    assert_eq!(version, vec![Some("3".to_string())]);
    let tables = sql(
        &base_url(),
        &format!(
            "SELECT count(*)::text FROM pg_tables WHERE schemaname = '{schema}' \
             AND tablename IN ('progress', 'capability_audit')"
        ),
    );
    assert_eq!(tables, vec![Some("2".to_string())], "the tables v3 added are created");

    // but a v2 schema_version beside tables of another shape is foreign
    let url = fresh_url("olderforeign");
    let schema = schema_of(&url);
    sql(
        &base_url(),
        &format!(
            "CREATE SCHEMA {schema};
             CREATE TABLE {schema}.schema_version (version BIGINT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL);
             INSERT INTO {schema}.schema_version VALUES (2, 0);
             CREATE TABLE {schema}.handoffs (id int, body jsonb);
             CREATE TABLE {schema}.checkpoints (id int);
             CREATE TABLE {schema}.ownership (id int)"
        ),
    );
    refused_untouched(&url, "handoffs.hid is missing");
}
