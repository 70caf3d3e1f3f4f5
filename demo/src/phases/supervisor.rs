//! Phase `supervisor`: host A's supervisor, until it leads.

use super::*;

pub(super) fn supervisor(cx: &mut Ctx, run: &mut Run, driver_a: &Runner) -> anyhow::Result<()> {
    let sup_args: Vec<String> =
        vec!["--json".into(), "supervisor".into(), cx.host_a.display().to_string(), "sup-A".into(), "86400".into()];
    let mut cmd = procs::command(&cx.prefix(run, Host::A), &cx.dhp, &sup_args);
    cmd.stdout(std::fs::File::create(cx.host_a.join("supervisor.out"))?)
        .stderr(std::fs::File::create(cx.host_a.join("supervisor.err"))?);
    let sup = Proc::spawn("supervisor", cmd)?;
    let sup_pid = sup.pid;
    run.procs.push(sup);
    wait_leader(cx, run, driver_a, "sup-A")?;
    cx.ui.say(&format!("host A: supervisor sup-A (pid {sup_pid}) is the leader"));
    cx.fact("supervisor_pid", json!(sup_pid));
    Ok(())
}

fn wait_leader(cx: &mut Ctx, run: &mut Run, driver: &Runner, id: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        check_interrupt()?;
        let l = dhp_core::store::with_tx(driver.store().as_ref(), dhp_core::store::Mode::Read, |tx| tx.leadership())?;
        if l.is_some_and(|l| l.holder == id && l.expires_at > now()) {
            return Ok(());
        }
        if let Some(s) = run.proc_mut("supervisor").and_then(|p| p.try_status()) {
            anyhow::bail!("dhp supervisor exited ({s}): {}", tail(&cx.host_a.join("supervisor.err"), 3));
        }
        anyhow::ensure!(Instant::now() < deadline, "the supervisor did not become leader");
        std::thread::sleep(Duration::from_millis(5));
    }
}
