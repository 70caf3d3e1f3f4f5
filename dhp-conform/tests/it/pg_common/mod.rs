//! A throwaway PostgreSQL database per test (inside the cluster of
//! DHP_TEST_PG_URL), so a test can see exactly which schemas a run left.
#![allow(dead_code)]

use postgres::{Client, NoTls};

pub struct FreshDb {
    admin: String,
    name: String,
    /// The database's URL (no `schema=`): what `--store` is given.
    pub url: String,
}

/// `url` with its database name replaced.
fn with_db(url: &str, db: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, format!("?{q}")),
        None => (url, String::new()),
    };
    let auth_start = head.find("://").expect("a URL") + 3;
    let base = match head[auth_start..].find('/') {
        Some(i) => &head[..auth_start + i],
        None => head,
    };
    format!("{base}/{db}{query}")
}

impl FreshDb {
    pub fn new(tag: &str) -> FreshDb {
        let admin = dhp_testkit::pg_url();
        let name = format!("dhpc_t_{tag}_{}", std::process::id());
        let mut c = Client::connect(&admin, NoTls).expect("connecting to DHP_TEST_PG_URL");
        // one statement each: DROP/CREATE DATABASE cannot run in a transaction block
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .expect("dropping an old test database");
        c.batch_execute(&format!("CREATE DATABASE {name}")).expect("creating a test database");
        let url = with_db(&admin, &name);
        FreshDb { admin, name, url }
    }

    /// Schemas the runner made (`dhpc_…`).
    pub fn runner_schemas(&self) -> Vec<String> {
        let mut c = Client::connect(&self.url, NoTls).expect("connecting to the test database");
        c.query("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'dhpc\\_%' ORDER BY nspname", &[])
            .expect("listing schemas")
            .iter()
            .map(|r| r.get(0))
            .collect()
    }
}

impl Drop for FreshDb {
    fn drop(&mut self) {
        if let Ok(mut c) = Client::connect(&self.admin, NoTls) {
            let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name));
        }
    }
}
