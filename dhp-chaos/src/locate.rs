//! Finding the `dhp` binary: `--dhp PATH`, else next to the current
//! executable (`target/<profile>/dhp`, also from `target/<profile>/deps/`),
//! (re)built with cargo under `cargo run`/`cargo test` — the shared
//! implementation is [`dhp_kit::locate::dhp`].

use anyhow::Result;
use std::path::{Path, PathBuf};

/// The `dhp` binary for the round's workers and supervisors.
pub fn dhp_binary(explicit: Option<&Path>) -> crate::error::Result<PathBuf> {
    let p = dhp_kit::locate::dhp(explicit, &mut |m| eprintln!("dhp-chaos: {m}"))?;
    Ok(p.canonicalize().unwrap_or(p))
}

/// Does `dhp` have failpoints (the cargo feature `failpoints`)? Asked by
/// making one fire: a one-chunk handoff in a scratch store, worked by
/// `dhp work` with `checkpoint.in_tx=kill@1` armed. A build with
/// failpoints SIGKILLs itself at its first checkpoint; a build without
/// them (the installed tools) ignores the variable and completes. Anything
/// else is an error that says what happened.
pub fn has_failpoints(dhp: &Path) -> Result<bool> {
    use anyhow::{bail, Context};
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::Builder::new().prefix("dhp-chaos-probe-").tempdir()?;
    let store = tmp.path().join("store");
    std::fs::create_dir_all(&store)?;
    let hid = crate::procs::dispatch_census(dhp, store.display().to_string(), (1000, 1010), 10, 3)?;
    let log = tmp.path().join("probe.log");
    let mut child = std::process::Command::new(dhp)
        .arg("work")
        .arg(&store)
        .args(["--runner", "failpoint-probe", "claim", &hid, "--pace", "0", "--ship"])
        .arg(tmp.path().join("ship.log"))
        .env("DHP_FAILPOINTS", "checkpoint.in_tx=kill@1")
        .env("DHP_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .spawn()
        .with_context(|| format!("running {} work (failpoint probe)", dhp.display()))?;
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let st = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if std::time::Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            bail!("the failpoint probe ({} work on a one-chunk handoff) did not end within 30 s", dhp.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    match (st.signal(), st.code()) {
        (Some(9), _) => Ok(true),
        (_, Some(0)) => Ok(false),
        _ => bail!(
            "the failpoint probe ({} work on a one-chunk handoff) ended with {st}: {}",
            dhp.display(),
            std::fs::read_to_string(&log).unwrap_or_default().trim()
        ),
    }
}
