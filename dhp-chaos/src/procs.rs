//! Child processes of a round: real `dhp work` / `dhp supervisor`
//! processes (or the reference's, or any command), each with its own log
//! file, signalled by pid with nix.

use anyhow::{Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde::Serialize;
use std::fs::File;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// What a child process is in the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A worker running one handoff (`dhp work`, the reference's, or a command).
    Worker,
    /// A supervisor (`dhp supervisor`, the reference's, or a command).
    Supervisor,
    /// The `dhp transport` TCP server (the peer) in `--ship tcp` rounds.
    Transport,
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExitInfo {
    /// When it was reaped, epoch seconds.
    pub t: f64,
    /// Its exit code, when it exited rather than died of a signal.
    pub code: Option<i32>,
    /// The signal it died of, if any.
    pub signal: Option<i32>,
    /// It was SIGSTOPped when it died (e.g. SIGKILLed by a supervisor's
    /// stalled-writer watchdog while stopped).
    pub stopped: bool,
}

/// One child process.
#[derive(Debug)]
pub struct Proc {
    /// The harness's name for it (`w0003-h1`, `sup2`, `transport1`), also its log's name.
    pub name: String,
    /// What it is in the round.
    pub role: Role,
    /// builtin / python / cmd
    pub imp: String,
    /// The handoff it works on (workers).
    pub hid: Option<String>,
    /// claim / recover (workers)
    pub mode: Option<String>,
    /// For recoverers: the orphan fence they were spawned for.
    pub orphan_fence: Option<i64>,
    /// What was armed in it: a `DHP_FAILPOINTS` spec, or `pause-points:…` for the reference.
    pub failpoint: Option<String>,
    /// The child handle (it reaps the process).
    pub child: Child,
    /// Its process id.
    pub pid: i32,
    /// When it was started, epoch seconds.
    pub spawned: f64,
    /// `Some((t, fence))` while SIGSTOPped.
    pub paused: Option<(f64, Option<i64>)>,
    /// How it ended, once reaped.
    pub exited: Option<ExitInfo>,
    /// The exit was written to the history. Whoever reaps a child (the
    /// reaper, a signal that finds it already dead, teardown), only the
    /// reaper reports it: no death goes unrecorded.
    pub exit_reported: bool,
    /// The harness SIGKILLed it (fault or teardown).
    pub killed_by_harness: bool,
    /// Its log file (stdout and stderr).
    pub log: PathBuf,
}

impl Proc {
    /// Not reaped yet (a SIGSTOPped child is alive).
    pub fn alive(&self) -> bool {
        self.exited.is_none()
    }

    /// Alive and running (not SIGSTOPped).
    pub fn active(&self) -> bool {
        self.exited.is_none() && self.paused.is_none()
    }

    /// Reap without blocking; returns the exit if it just happened.
    pub fn poll(&mut self) -> Option<ExitInfo> {
        if self.exited.is_some() {
            return None;
        }
        match self.child.try_wait() {
            Ok(Some(st)) => Some(self.set_exited(st)),
            Ok(None) => None,
            Err(_) => None,
        }
    }

    /// Block until it exits (teardown).
    pub fn wait(&mut self) {
        if self.exited.is_none() {
            if let Ok(st) = self.child.wait() {
                self.set_exited(st);
            }
        }
    }

    fn set_exited(&mut self, st: std::process::ExitStatus) -> ExitInfo {
        let e =
            ExitInfo { t: crate::hist::now(), code: st.code(), signal: st.signal(), stopped: self.paused.is_some() };
        self.exited = Some(e.clone());
        self.paused = None;
        // reaped: its id may be reused from now on
        let pid = self.pid;
        crate::teardown::forget(|r| {
            r.pgids.remove(&pid);
        });
        e
    }

    /// The exit, once, if it has not been reported yet (reaping it first
    /// if it is due).
    pub fn take_unreported_exit(&mut self) -> Option<ExitInfo> {
        self.poll();
        if self.exit_reported {
            return None;
        }
        let e = self.exited.clone()?;
        self.exit_reported = true;
        Some(e)
    }

    /// Send a signal, but only to a child that has not been reaped (its pid
    /// cannot have been reused). Returns false if it already exited.
    pub fn signal(&mut self, sig: Signal) -> bool {
        if self.exited.is_some() {
            return false;
        }
        if self.poll().is_some() {
            return false;
        }
        kill(Pid::from_raw(self.pid), sig).is_ok()
    }
}

/// What to start.
pub struct Spec {
    /// The process's name ([`Proc::name`]); its log is `<name>.log`.
    pub name: String,
    /// What it is in the round.
    pub role: Role,
    /// builtin / python / cmd
    pub imp: String,
    /// The command line, program first.
    pub argv: Vec<String>,
    /// Environment variables added to the harness's own.
    pub env: Vec<(String, String)>,
    /// The handoff it works on (workers).
    pub hid: Option<String>,
    /// claim / recover (workers)
    pub mode: Option<String>,
    /// For recoverers: the orphan fence they are spawned for.
    pub orphan_fence: Option<i64>,
    /// What is armed in it (see [`Proc::failpoint`]).
    pub failpoint: Option<String>,
}

impl Spec {
    /// A process that serves the store (supervisor, transport server):
    /// bound to no handoff, no failpoint.
    pub fn service(name: String, role: Role, imp: &str, argv: Vec<String>, env: Vec<(String, String)>) -> Spec {
        Spec { name, role, imp: imp.into(), argv, env, hid: None, mode: None, orphan_fence: None, failpoint: None }
    }
}

/// Start a child with stdout and stderr going to `<logdir>/<name>.log`,
/// in its own process group (a Ctrl-C at the terminal reaches the harness,
/// which tears its children down itself).
pub fn spawn(mut spec: Spec, logdir: &Path) -> Result<Proc> {
    let log = logdir.join(format!("{}.log", spec.name));
    let out = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    secrets_to_env(&mut spec.argv, &mut spec.env);
    let (prog, args) = spec.argv.split_first().context("empty command")?;
    // registered for teardown as it starts (its group: it leads one)
    let mut cmd = Command::new(prog);
    // no descendant leaves the round's cgroup (setsid, double fork, env -i)
    crate::survivors::join(&mut cmd, logdir);
    if spec.env.iter().any(|(k, _)| k == "LD_PRELOAD") {
        // a SIGKILLed faked process of this pid may have left libfaketime's files
        dhp_kit::faketime::clear_stale_on_exec(&mut cmd);
    }
    let child = crate::teardown::guarded(|r| {
        let child = cmd
            .args(args)
            .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            // the second net, where no cgroup can be made (crate::survivors)
            .env(crate::survivors::MARK_VAR, crate::survivors::mark(logdir))
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .process_group(0)
            .spawn()
            .with_context(|| format!("spawning {}", spec.argv.join(" ")))?;
        r.pgids.insert(child.id() as i32);
        Ok(child)
    })?;
    let pid = child.id() as i32;
    Ok(Proc {
        name: spec.name,
        role: spec.role,
        imp: spec.imp,
        hid: spec.hid,
        mode: spec.mode,
        orphan_fence: spec.orphan_fence,
        failpoint: spec.failpoint,
        child,
        pid,
        spawned: crate::hist::now(),
        paused: None,
        exited: None,
        exit_reported: false,
        killed_by_harness: false,
        log,
    })
}

/// All children of a round. Dropping it kills whatever is still alive.
#[derive(Debug, Default)]
pub struct Table {
    /// Every child of the round, in start order.
    pub procs: Vec<Proc>,
}

impl Table {
    /// The child with this [`Proc::name`].
    pub fn by_name(&self, name: &str) -> Option<&Proc> {
        self.procs.iter().find(|p| p.name == name)
    }

    /// The children of `role` not reaped yet.
    pub fn alive(&self, role: Role) -> impl Iterator<Item = &Proc> {
        self.procs.iter().filter(move |p| p.role == role && p.alive())
    }

    /// Reap what has exited and return every exit not reported yet (by
    /// index), including exits reaped elsewhere — by [`Proc::signal`]
    /// finding its target already dead, or by [`Table::kill_all`]. The
    /// caller writes them to the history; each is returned once.
    pub fn reap_exits(&mut self) -> Vec<(usize, ExitInfo)> {
        self.procs.iter_mut().enumerate().filter_map(|(i, p)| p.take_unreported_exit().map(|e| (i, e))).collect()
    }

    /// SIGCONT then SIGKILL everything alive, and reap.
    pub fn kill_all(&mut self) {
        for p in &mut self.procs {
            if p.alive() {
                if p.paused.is_some() {
                    p.signal(Signal::SIGCONT);
                }
                if p.signal(Signal::SIGKILL) {
                    p.killed_by_harness = true;
                }
            }
        }
        for p in &mut self.procs {
            p.wait();
        }
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// The reference's side of a python supervisor: the interpreter, the
/// history shim that wraps it, and its `supervisor3_watch` driver.
pub(crate) struct PySupervisor<'a> {
    pub(crate) python: &'a Path,
    pub(crate) shim: &'a Path,
    pub(crate) supwatch: &'a Path,
}

/// A supervisor's implementation name and argv, the same for every harness
/// that spawns one: `dhp supervisor STORE NAME SECS --history H`, the
/// reference's watcher through the history shim, or a command given the
/// `dhp` arguments.
pub(crate) fn supervisor_argv(
    imp: &crate::config::Impl,
    dhp: &Path,
    py: Option<PySupervisor<'_>>,
    store: String,
    name: &str,
    secs: String,
    history: String,
) -> Result<(&'static str, Vec<String>)> {
    use crate::config::Impl;
    Ok(match imp {
        Impl::Builtin | Impl::Mixed => (
            "builtin",
            vec![
                dhp.display().to_string(),
                "supervisor".into(),
                store,
                name.to_string(),
                secs,
                "--history".into(),
                history,
            ],
        ),
        Impl::Python => {
            let py = py.context("python environment missing")?;
            (
                "python",
                vec![
                    py.python.display().to_string(),
                    py.shim.display().to_string(),
                    "supervisor".into(),
                    history,
                    name.to_string(),
                    py.supwatch.display().to_string(),
                    store,
                    name.to_string(),
                    secs,
                ],
            )
        }
        Impl::Cmd(cmd) => {
            let mut a = cmd.clone();
            a.extend([store, name.to_string(), secs, "--history".into(), history]);
            ("cmd", a)
        }
    })
}

/// Move the password of every `postgres://` argument out of the command
/// line and into the child's environment as `PGPASSWORD` (which `dhp`, the
/// reference's libpq and psql read): a process's argv is world-readable
/// (`/proc/PID/cmdline`, `ps`), its environment is not. The round's stores
/// are on one server, so one password serves them all.
pub(crate) fn secrets_to_env(argv: &mut [String], env: &mut Vec<(String, String)>) {
    for a in argv.iter_mut() {
        let lower = a.get(..13).unwrap_or(a).to_ascii_lowercase();
        if !(lower.starts_with("postgres://") || lower.starts_with("postgresql://")) {
            continue;
        }
        let (bare, password) = dhp_secrets::passfile::split_password(a);
        if let Some(pw) = password {
            *a = bare;
            env.retain(|(k, _)| k != "PGPASSWORD");
            env.push(("PGPASSWORD".into(), pw));
        }
    }
}

/// Dispatch one census handoff over `[lo, hi)` by `chunk` with `dhp
/// dispatch --create` on `store`; its handoff id.
pub(crate) fn dispatch_census(
    dhp: &Path,
    store: String,
    (lo, hi): (u64, u64),
    chunk: u64,
    max_attempts: i64,
) -> Result<String> {
    let mut argv = vec![store];
    let mut env = Vec::new();
    secrets_to_env(&mut argv, &mut env);
    let out = Command::new(dhp)
        .args(["--json", "dispatch", "--create"])
        .args(argv)
        .envs(env)
        .arg("--census")
        .arg(format!("{lo},{hi},{chunk}"))
        .arg("--max-attempts")
        .arg(max_attempts.to_string())
        .args(["--created-by", "dhp-chaos"])
        .output()
        .with_context(|| format!("running {} dispatch", dhp.display()))?;
    if !out.status.success() {
        anyhow::bail!("dhp dispatch failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).context("dhp dispatch --json output")?;
    Ok(v["hid"].as_str().context("dhp dispatch printed no hid")?.to_string())
}
