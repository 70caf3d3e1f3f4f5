//! `dhp-chaos db`: the database control plane by hand, what the rounds do
//! to their PostgreSQL (the same layouts as scripts/pg.sh, pg-cluster.sh
//! and pg-auto.sh): set one up, break it, tear it down.

use anyhow::{bail, Result};
use dhp_chaos::db::{self, sys::Log, Cut, Kind};
use std::path::Path;

/// The steps `dhp-chaos db step` takes.
pub const STEPS: [&str; 10] =
    ["kill", "start", "cut", "cut-monitor", "heal", "primary", "promote", "switchover", "detach", "rejoin"];

/// `KIND` of the command line.
fn kind(s: &str) -> Result<Kind> {
    Kind::parse(s).ok_or_else(|| anyhow::anyhow!("no database kind {s:?}: single, cluster or auto"))
}

/// `db start KIND`: set one up and leave it running; print `DIR URL`.
pub fn start(k: &str, async_: bool, watch: Option<u32>) -> Result<i32> {
    let owned = match (kind(k)?, async_) {
        (Kind::Single, false) => db::single::setup()?,
        (Kind::Cluster, a) => db::cluster::setup(a)?,
        (Kind::Auto, false) => db::auto::setup()?,
        (_, true) => bail!("--async is the harness-promoted cluster's (db start cluster --async)"),
    };
    let (dir, url) = owned.keep(watch)?;
    println!("{} {url}", dir.display());
    Ok(0)
}

/// `db stop KIND DIR`.
pub fn stop(k: &str, dir: &Path) -> Result<i32> {
    kind(k)?.teardown(dir);
    Ok(0)
}

/// `db step KIND DIR STEP [NODE]`: one step; what it did on stdout.
pub fn step(k: &str, dir: &Path, step: &str, node: Option<&str>) -> Result<i32> {
    let k = kind(k)?;
    let d = k.open(dir, Log::default())?;
    let node = || node.ok_or_else(|| anyhow::anyhow!("db step {step} needs a NODE"));
    let out = match step {
        "kill" => db::kill_of(d.as_ref())?.kill(node()?)?,
        "start" => db::kill_of(d.as_ref())?.start(node()?)?,
        "cut" => db::partition_of(d.as_ref())?.cut(node()?, Cut::All)?,
        "cut-monitor" => db::partition_of(d.as_ref())?.cut(node()?, Cut::Monitor)?,
        "heal" => db::partition_of(d.as_ref())?.heal(node()?)?,
        "primary" => db::primary_of(d.as_ref())?.primary()?,
        "promote" => db::primary_of(d.as_ref())?.promote()?,
        "switchover" => db::primary_of(d.as_ref())?.switchover()?,
        "detach" if k == Kind::Cluster => db::cluster::Cluster::at(dir, Log::default())?.detach()?,
        "rejoin" if k == Kind::Cluster => db::cluster::Cluster::at(dir, Log::default())?.rejoin()?,
        "detach" | "rejoin" => bail!("db step {step}: the harness-promoted cluster's only"),
        _ => bail!("no step {step:?}: {}", STEPS.join(", ")),
    };
    println!("{out}");
    Ok(0)
}
