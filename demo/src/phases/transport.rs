//! Phase `transport`: host B's transport server (or announce it down), and
//! starting that server (also later, from the `worker-a` phase).

use super::*;

/// Start host B's transport server now, or (`--transport-down-s`) plan it
/// for later on a port chosen now.
pub(super) fn transport(cx: &mut Ctx, run: &mut Run) -> anyhow::Result<TransportPlan> {
    let host = run.netns.as_ref().map(|n| n.addr_b.to_string()).unwrap_or_else(|| "127.0.0.1".into());
    let delayed = cx.args.transport_down_s > 0.0;
    let port = if run.netns.is_some() {
        dhp_core::transport::net::DEFAULT_PORT
    } else if delayed {
        procs::free_port("127.0.0.1")?
    } else {
        0
    };
    let mut addr = format!("{host}:{port}");
    if !delayed {
        addr = start_transport(cx, run, &host, port)?;
    } else {
        cx.ui.say(&format!(
            "host B: transport server DOWN at the start (comes up on {addr} {:.1} s after worker-A starts)",
            cx.args.transport_down_s
        ));
    }
    Ok(TransportPlan { host, port, addr, up: !delayed })
}

/// Start `dhp transport` on host B and wait for its listening line.
/// Returns `HOST:PORT` as the server reports it.
pub(super) fn start_transport(cx: &mut Ctx, run: &mut Run, host: &str, port: u16) -> anyhow::Result<String> {
    let args: Vec<String> = vec![
        "transport".into(),
        cx.host_b.join("transport").display().to_string(),
        "--host".into(),
        host.to_string(),
        "--port".into(),
        port.to_string(),
    ];
    let mut cmd = procs::command(&cx.prefix(run, Host::B), &cx.dhp, &args);
    cmd.env("DHP_TRANSPORT_TOKEN", &cx.token)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(cx.host_b.join("transport.err"))?);
    let mut p = Proc::spawn("transport", cmd)?;
    let lines = pump_lines(
        p.child.stdout.take().ok_or_else(|| anyhow::anyhow!("{}: no stdout pipe", p.name))?,
        cx.host_b.join("transport.out"),
    );
    let pid = p.pid;
    run.procs.push(p);
    let deadline = Instant::now() + Duration::from_secs(20);
    let addr = loop {
        check_interrupt()?;
        match lines.recv_timeout(Duration::from_millis(20)) {
            Ok(l) => {
                if let Some(rest) = l.split("listening on ").nth(1) {
                    break rest.split(',').next().unwrap_or("").trim().to_string();
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                anyhow::bail!("dhp transport exited before listening: {}", tail(&cx.host_b.join("transport.err"), 3))
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        anyhow::ensure!(Instant::now() < deadline, "dhp transport did not start listening");
    };
    cx.transport_lines = Some(lines);
    cx.ui.say(&format!(
        "host B: {} — transport server (pid {pid}) listening on {addr}, logs -> host-b/transport/",
        cx.host_b.display()
    ));
    cx.fact("transport", json!({"pid": pid, "addr": addr}));
    Ok(addr)
}
