//! Implementations under test, the context an assertion runs in, and
//! running one assertion to an [`Outcome`].

use crate::check::{Check, Fail};
use crate::client::{AdapterError, ClockOffset, Hello, Lease, Pool, Profile, StderrLog};
use crate::store_view::{EditLog, StoreView};
use crate::stores::{PgBase, StoreBase};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Timed-out requests after which an implementation is given up on, even
/// if it still answers a probe: each costs a full `--timeout`. Above the
/// number of assertions that use any one operation (four call `suspend`),
/// so that one operation that hangs errors only the assertions using it.
pub const MAX_TIMEOUTS: u64 = 5;

/// Runner-wide settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// Per-request timeout.
    pub timeout: Duration,
    /// Copy adapter stderr to the runner's stderr.
    pub echo_stderr: bool,
    /// Keep each assertion's temporary directory (printed on failure).
    pub keep: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { timeout: Duration::from_secs(20), echo_stderr: false, keep: false }
    }
}

/// An implementation under test, reached through its adapter command.
pub struct Impl {
    /// The name reports use (`ours`, `reference`, or one given with
    /// `LABEL=CMD`; made unique by the caller).
    pub label: String,
    /// The adapter command line.
    pub command: String,
    /// Where its stores are created (`--store`).
    pub store: Arc<StoreBase>,
    /// The handshake, or why it failed.
    pub hello: Result<Hello, AdapterError>,
    default: Pool,
    short_lease: Pool,
    short_lines: Pool,
    health: Mutex<Health>,
    /// Stderr of all its processes.
    pub stderr: std::sync::Arc<StderrLog>,
}

/// Whether an implementation still answers: after a request timed out,
/// a fresh process is probed once; one that does not answer the probe
/// either (or too many timeouts in all) marks the implementation hung, and
/// its remaining assertions are errored at once instead of each waiting
/// out the timeout.
#[derive(Debug, Default)]
struct Health {
    /// Timeouts already looked at.
    timeouts_seen: u64,
    hung: Option<String>,
}

impl std::fmt::Debug for Impl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Impl").field("label", &self.label).field("command", &self.command).finish()
    }
}

/// A label safe for test names: lowercase `[a-z0-9.-]`.
pub fn sanitize_label(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "impl".into()
    } else {
        out
    }
}

impl Impl {
    /// Start one adapter process and shake hands; the process stays in the
    /// pool. A failed handshake is kept: every assertion then errors with it.
    pub fn connect(command: &str, label: Option<&str>, opts: &Options) -> Impl {
        Self::connect_on(command, label, Arc::default(), opts)
    }

    /// [`Impl::connect`], its stores created on `store`.
    pub fn connect_on(command: &str, label: Option<&str>, store: Arc<StoreBase>, opts: &Options) -> Impl {
        let stderr = std::sync::Arc::new(StderrLog::default());
        let default = Pool::new(command, Profile::Default, opts.timeout, opts.echo_stderr).with_log(stderr.clone());
        let short_lease =
            Pool::new(command, Profile::ShortLease, opts.timeout, opts.echo_stderr).with_log(stderr.clone());
        let short_lines =
            Pool::new(command, Profile::ShortLines, opts.timeout, opts.echo_stderr).with_log(stderr.clone());
        let hello = match default.get() {
            Ok(lease) => Ok(lease.hello().cloned().expect("a pooled adapter has shaken hands")),
            Err(e) => Err(e),
        };
        let label = match (label, &hello) {
            (Some(l), _) => l.to_string(),
            (None, Ok(h)) => sanitize_label(&h.implementation),
            (None, Err(_)) => sanitize_label(command.split_whitespace().next().unwrap_or("impl")),
        };
        Impl {
            label,
            command: command.to_string(),
            store,
            hello,
            default,
            short_lease,
            short_lines,
            health: Mutex::default(),
            stderr,
        }
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why the implementation was given up on, if it was.
    pub fn hung(&self) -> Option<String> {
        self.health().hung.clone()
    }

    /// After an assertion: if a request timed out since the last look,
    /// probe a fresh process (`hello`, then `build_envelope`, which needs no
    /// store); if it does not answer, or the timeouts add up to
    /// [`MAX_TIMEOUTS`], the implementation is hung.
    pub fn check_health(&self) {
        let mut h = self.health();
        let total = self.default.timeouts() + self.short_lease.timeouts() + self.short_lines.timeouts();
        if h.hung.is_some() || total == h.timeouts_seen {
            return;
        }
        h.timeouts_seen = total;
        if total >= MAX_TIMEOUTS {
            h.hung = Some(format!("{total} requests timed out; the remaining assertions were not run"));
            return;
        }
        let probe = self.default.fresh().and_then(|mut a| {
            a.call(
                "build_envelope",
                serde_json::json!({"kind": "probe", "inputs": {}, "output_schema": {"type": "object"}}),
            )
        });
        if let Err(e) = probe {
            h.hung = Some(format!("a request timed out, and a fresh process did not answer either ({e}); the remaining assertions were not run"));
        }
        // the probe's own timeout is part of this verdict, not a new one
        h.timeouts_seen = self.default.timeouts() + self.short_lease.timeouts() + self.short_lines.timeouts();
    }

    /// Whether the adapter shook hands and declares `feature`.
    pub fn has(&self, feature: &str) -> bool {
        self.hello.as_ref().is_ok_and(|h| h.has(feature))
    }

    /// Its pool of adapter processes started with `profile`.
    pub fn pool(&self, profile: Profile) -> &Pool {
        match profile {
            Profile::Default => &self.default,
            Profile::ShortLease => &self.short_lease,
            Profile::ShortLines => &self.short_lines,
        }
    }

    /// One line describing the implementation.
    pub fn describe(&self) -> String {
        match &self.hello {
            Ok(h) => format!(
                "{} = {} {} (DHP {}; features: {}; stores: {})",
                self.label,
                h.implementation,
                h.version,
                h.protocol_version,
                h.features.iter().cloned().collect::<Vec<_>>().join(", "),
                self.store.describe()
            ),
            Err(e) => format!("{} = `{}`: {e}", self.label, self.command),
        }
    }

    /// Close idle adapter processes.
    pub fn shutdown(&self) {
        self.default.drain();
        self.short_lease.drain();
        self.short_lines.drain();
    }
}

/// Which level an assertion belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// The reference's ten (`dhp/conform.py`).
    Core,
    /// Beyond the ten.
    Extended,
    /// Implementation A writes, B continues.
    Cross,
    /// `--explore`: random sequences judged by the model, one row per
    /// operation family.
    Explore,
}

impl Level {
    /// The level's name in reports and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Core => "core",
            Level::Extended => "extended",
            Level::Cross => "cross",
            Level::Explore => "explore",
        }
    }
}

/// A single-implementation assertion.
#[derive(Clone, Copy)]
pub struct Assertion {
    /// The assertion id (`fencing`, …), as reports and filters name it.
    pub name: &'static str,
    /// The level it belongs to.
    pub level: Level,
    /// Optional features the assertion cannot run without.
    pub needs: &'static [&'static str],
    /// One sentence: the guarantee checked.
    pub about: &'static str,
    /// The check: `Ok` passes, a [`crate::Fail`] says how it ended otherwise.
    pub run: fn(&Ctx<'_>) -> Check,
}

/// A cross-implementation assertion: `a` writes, `b` continues.
#[derive(Clone, Copy)]
pub struct CrossAssertion {
    /// The assertion id (`cross-…`).
    pub name: &'static str,
    /// B continues A's own store (created on A's engine), rather than a
    /// log or bundle on a store of its own.
    pub shares_store: bool,
    /// Optional features both sides must declare.
    pub needs: &'static [&'static str],
    /// One sentence: the guarantee checked.
    pub about: &'static str,
    /// The check, given both implementations.
    pub run: fn(&CrossCtx<'_>) -> Check,
}

/// Temporary directory of one assertion run, and the PostgreSQL schemas
/// it handed out (dropped with [`Workdir::cleanup`] unless kept).
pub struct Workdir {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    schemas: Mutex<Vec<(Arc<StoreBase>, String)>>,
}

impl Workdir {
    fn new(keep: bool, under: &StoreBase) -> Check<Workdir> {
        let b = tempfile::Builder::new().prefix("dhp-conform-").clone();
        let dir = match under {
            StoreBase::Dir(Some(d)) => b.tempdir_in(d)?,
            _ => b.tempdir()?,
        };
        let schemas = Mutex::default();
        if keep {
            Ok(Workdir { path: dir.keep(), dir: None, schemas })
        } else {
            Ok(Workdir { path: dir.path().to_path_buf(), dir: Some(dir), schemas })
        }
    }

    /// A path inside the directory (nothing is created).
    pub fn path(&self, name: &str) -> String {
        self.path.join(name).to_string_lossy().into_owned()
    }

    /// A store root directory, created empty.
    pub fn root(&self, name: &str) -> Check<String> {
        let p = self.path.join(name);
        std::fs::create_dir_all(&p)?;
        Ok(p.to_string_lossy().into_owned())
    }

    /// A fresh store location on `base`: a directory as [`Workdir::root`],
    /// or a new schema's URL (the implementation creates the schema).
    pub fn root_on(&self, base: &Arc<StoreBase>, name: &str) -> Check<String> {
        match &**base {
            StoreBase::Dir(_) => self.root(name),
            StoreBase::Postgres(pg) => {
                let (schema, url) = pg.location();
                self.lock_schemas().push((base.clone(), schema));
                Ok(url)
            }
        }
    }

    fn lock_schemas(&self) -> std::sync::MutexGuard<'_, Vec<(Arc<StoreBase>, String)>> {
        self.schemas.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The directory (kept after the run with `--keep`).
    pub fn dir(&self) -> &Path {
        &self.path
    }

    fn is_kept(&self) -> bool {
        self.dir.is_none()
    }

    /// The schemas handed out, for messages.
    fn schema_names(&self) -> Vec<String> {
        self.lock_schemas().iter().map(|(_, s)| s.clone()).collect()
    }

    /// Drop the schemas handed out (unless kept).
    fn cleanup(&self) -> Result<(), crate::Error> {
        if self.is_kept() {
            return Ok(());
        }
        let schemas = std::mem::take(&mut *self.lock_schemas());
        for (base, schema) in schemas {
            if let StoreBase::Postgres(pg) = &*base {
                PgBase::drop_schemas(pg, std::slice::from_ref(&schema))?;
            }
        }
        Ok(())
    }
}

/// What an assertion against one implementation runs with.
pub struct Ctx<'a> {
    /// The implementation under test.
    pub imp: &'a Impl,
    /// This run's temporary directory and schemas.
    pub work: Workdir,
    /// How far this assertion moved the implementation's clock on
    /// (`clock-control`; stays 0 without it).
    clock: ClockOffset,
    /// The runner's own writes to this assertion's stores.
    edits: EditLog,
}

impl<'a> Ctx<'a> {
    /// A context for `imp` in `work`, its clock at real time.
    pub fn new(imp: &'a Impl, work: Workdir) -> Ctx<'a> {
        Ctx { imp, work, clock: ClockOffset::default(), edits: EditLog::default() }
    }

    /// `lease`, following this assertion's clock if the runner controls
    /// the implementation's.
    fn follow(&self, mut lease: Lease<'a>) -> Lease<'a> {
        lease.follow_clock(self.controls_clock().then(|| self.clock.clone()));
        lease
    }

    /// A pooled adapter process (default profile).
    pub fn adapter(&self) -> Check<Lease<'a>> {
        Ok(self.follow(self.imp.pool(Profile::Default).get()?))
    }

    /// A pooled adapter process of another profile.
    pub fn adapter_with(&self, profile: Profile) -> Check<Lease<'a>> {
        Ok(self.follow(self.imp.pool(profile).get()?))
    }

    /// A process started for this use (e.g. one that will be killed).
    pub fn fresh(&self) -> Check<Lease<'a>> {
        Ok(self.follow(self.imp.pool(Profile::Default).fresh()?))
    }

    /// `n` processes started together (races).
    pub fn fresh_many(&self, n: usize) -> Check<Vec<Lease<'a>>> {
        Ok(self.imp.pool(Profile::Default).fresh_many(n)?.into_iter().map(|l| self.follow(l)).collect())
    }

    /// Whether the runner moves the implementation's clock instead of
    /// waiting (it declares `clock-control`).
    pub fn controls_clock(&self) -> bool {
        self.has(crate::protocol::feature::CLOCK_CONTROL)
    }

    /// The time the implementation's protocol clock reads (Unix seconds):
    /// real time plus what this assertion moved it on. Times the runner
    /// compares with stored ones, or writes into the store itself, are in
    /// this clock; a barrier's `at` stays real time.
    pub fn now(&self) -> f64 {
        crate::assertions::now() + self.clock.get()
    }

    /// Let the implementation's clock reach `t` ([`Ctx::now`] time): move
    /// it on when the runner controls it, else sleep until then.
    pub fn wait_until(&self, t: f64) {
        if self.controls_clock() {
            self.clock.advance(t - self.now());
        } else {
            crate::assertions::sleep_until(t);
        }
    }

    /// How the runner moved time, if it did (`""` when it waited, or has
    /// not moved the clock): every failure message of the assertion ends
    /// with it.
    pub fn moved(&self) -> String {
        match self.clock.get() {
            o if o > 0.0 => format!(
                "clock-control: the runner moved the implementation's clock on by {o:.3} s in this assertion \
                 (clock_offset_s), instead of waiting"
            ),
            _ => String::new(),
        }
    }

    /// [`Ctx::wait_until`] `secs` from now.
    pub fn wait(&self, secs: f64) {
        self.wait_until(self.now() + secs);
    }

    /// A fresh store location on the implementation's engine.
    pub fn root(&self, name: &str) -> Check<String> {
        self.work.root_on(&self.imp.store, name)
    }

    /// A path named `name` in this run's directory (files, logs, bundles).
    pub fn path(&self, name: &str) -> String {
        self.work.path(name)
    }

    /// Whether the implementation declares `feature`.
    pub fn has(&self, feature: &str) -> bool {
        self.imp.has(feature)
    }

    /// The runner's own view of the store at `root`, when the
    /// implementation uses the standard store; `None` otherwise.
    pub fn store(&self, root: &str) -> Check<Option<StoreView>> {
        if self.has(crate::protocol::feature::STANDARD_STORE) {
            StoreView::open_location(root).map(|v| Some(v.logging(self.edits.clone())))
        } else {
            Ok(None)
        }
    }

    /// What a failure message adds: the runner's direct store edits and
    /// how far it moved the implementation's clock (`""` if neither).
    fn notes(&self) -> String {
        notes(&self.edits, &self.moved())
    }
}

fn notes(edits: &EditLog, moved: &str) -> String {
    let edits = edits.all();
    let mut out = String::new();
    if !edits.is_empty() {
        out.push_str(&format!(" [the runner edited the store directly in this assertion: {}]", edits.join("; ")));
    }
    if !moved.is_empty() {
        out.push_str(&format!(" [{moved}]"));
    }
    out
}

/// `res` with `notes` appended to a failure's or error's message.
fn annotate(res: std::thread::Result<Check>, notes: String) -> std::thread::Result<Check> {
    match res {
        Ok(Err(Fail::Failed(m))) => Ok(Err(Fail::Failed(format!("{m}{notes}")))),
        Ok(Err(Fail::Errored(m))) => Ok(Err(Fail::Errored(format!("{m}{notes}")))),
        other => other,
    }
}

/// What a cross-implementation assertion runs with.
pub struct CrossCtx<'a> {
    /// The implementation that writes.
    pub a: &'a Impl,
    /// The implementation that continues.
    pub b: &'a Impl,
    /// This run's temporary directory and schemas.
    pub work: Workdir,
    /// The runner's own writes to this assertion's stores.
    edits: EditLog,
}

impl<'a> CrossCtx<'a> {
    /// A pooled adapter process of A (default profile).
    pub fn a(&self) -> Check<Lease<'a>> {
        Ok(self.a.pool(Profile::Default).get()?)
    }

    /// A pooled adapter process of B (default profile).
    pub fn b(&self) -> Check<Lease<'a>> {
        Ok(self.b.pool(Profile::Default).get()?)
    }

    /// A fresh store location on A's engine (a store both use, or A's own).
    pub fn root(&self, name: &str) -> Check<String> {
        self.work.root_on(&self.a.store, name)
    }

    /// A fresh store location on B's engine (B's own store).
    pub fn root_b(&self, name: &str) -> Check<String> {
        self.work.root_on(&self.b.store, name)
    }

    /// A path named `name` in this run's directory.
    pub fn path(&self, name: &str) -> String {
        self.work.path(name)
    }

    /// The runner's view of a store both sides declare standard.
    pub fn store(&self, root: &str) -> Check<Option<StoreView>> {
        let std = crate::protocol::feature::STANDARD_STORE;
        if self.a.has(std) && self.b.has(std) {
            StoreView::open_location(root).map(|v| Some(v.logging(self.edits.clone())))
        } else {
            Ok(None)
        }
    }
}

/// How an assertion ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The guarantee held.
    Passed,
    /// The implementation broke the guarantee; why.
    Failed(String),
    /// No verdict: the adapter exchange broke; how.
    Errored(String),
    /// Not run: a feature it needs is not declared; which.
    Skipped(String),
}

impl Outcome {
    /// `passed`, `failed`, `errored` or `skipped`.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed(_) => "failed",
            Outcome::Errored(_) => "errored",
            Outcome::Skipped(_) => "skipped",
        }
    }

    /// The message (none for a pass).
    pub fn message(&self) -> Option<&str> {
        match self {
            Outcome::Passed => None,
            Outcome::Failed(m) | Outcome::Errored(m) | Outcome::Skipped(m) => Some(m),
        }
    }
}

/// Errored if an adapter did not shake hands; skipped if a needed
/// feature is not declared.
fn gate(imps: &[&Impl], needs: &[&str]) -> Option<Outcome> {
    for imp in imps {
        if let Err(e) = &imp.hello {
            return Some(Outcome::Errored(format!("no working adapter for {}: {e}", imp.label)));
        }
        if let Some(why) = imp.hung() {
            return Some(Outcome::Errored(AdapterError::Hung(format!("{}: {why}", imp.label)).to_string()));
        }
        for f in needs.iter().chain(imp.store.needs().as_ref()) {
            if !imp.has(f) {
                let on = match imp.store.needs() {
                    Some(n) if n == *f => " (it cannot take the PostgreSQL store locations of --store)",
                    _ => "",
                };
                return Some(Outcome::Skipped(format!(
                    "unsupported: {} does not declare feature `{f}`{on}",
                    imp.label
                )));
            }
        }
    }
    None
}

fn finish(res: std::thread::Result<Check>, work: &Workdir) -> Outcome {
    let kept = match (work.is_kept(), work.schema_names()) {
        (false, _) => String::new(),
        (true, s) if s.is_empty() => format!(" (files kept in {})", work.dir().display()),
        (true, s) => format!(" (files kept in {}; schemas kept: {})", work.dir().display(), s.join(", ")),
    };
    match res {
        Ok(Ok(())) => Outcome::Passed,
        Ok(Err(Fail::Failed(m))) => Outcome::Failed(format!("{m}{kept}")),
        Ok(Err(Fail::Errored(m))) => Outcome::Errored(format!("{m}{kept}")),
        Ok(Err(Fail::Skipped(m))) => Outcome::Skipped(m),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into());
            Outcome::Errored(format!("runner panicked (a dhp-conform bug): {msg}{kept}"))
        }
    }
}

/// Gate on the handshake and features, then run `body` in a fresh
/// working directory, timing it and turning a panic into *errored*.
fn execute(
    imps: &[&Impl],
    needs: &[&str],
    opts: &Options,
    body: impl FnOnce(Workdir) -> (std::thread::Result<Check>, Workdir),
) -> (Outcome, f64) {
    let start = Instant::now();
    if let Some(o) = gate(imps, needs) {
        return (o, 0.0);
    }
    let work = match Workdir::new(opts.keep, &imps[0].store) {
        Ok(w) => w,
        Err(f) => return (Outcome::Errored(f.message().to_string()), 0.0),
    };
    let (res, work) = body(work);
    let mut outcome = finish(res, &work);
    if let Err(e) = work.cleanup() {
        // a verdict stands; a schema left behind is the runner's problem, said loudly
        let msg = format!("dropping this assertion's PostgreSQL schemas: {e}");
        match &mut outcome {
            Outcome::Passed => outcome = Outcome::Errored(msg),
            Outcome::Failed(m) | Outcome::Errored(m) | Outcome::Skipped(m) => m.push_str(&format!(" ({msg})")),
        }
    }
    for imp in imps {
        imp.check_health();
    }
    (outcome, start.elapsed().as_secs_f64())
}

/// Run one assertion against one implementation.
pub fn run_one(imp: &Impl, a: &Assertion, opts: &Options) -> (Outcome, f64) {
    execute(&[imp], a.needs, opts, |work| {
        let ctx = Ctx::new(imp, work);
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (a.run)(&ctx)));
        (annotate(res, ctx.notes()), ctx.work)
    })
}

/// Run `body` against `imp` as an assertion runs (handshake and feature
/// gate, a fresh working directory, a panic reported as errored):
/// `--explore` and `replay` run through it.
pub fn run_body(imp: &Impl, needs: &[&str], opts: &Options, body: impl FnOnce(&Ctx<'_>) -> Check) -> (Outcome, f64) {
    execute(&[imp], needs, opts, |work| {
        let ctx = Ctx::new(imp, work);
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&ctx)));
        (annotate(res, ctx.notes()), ctx.work)
    })
}

/// Run one cross assertion: `a` writes, `b` continues.
pub fn run_cross(a: &Impl, b: &Impl, x: &CrossAssertion, opts: &Options) -> (Outcome, f64) {
    if let (true, Some(f)) = (x.shares_store, a.store.needs()) {
        if gate(&[a, b], x.needs).is_none() && !b.has(f) {
            let why = format!(
                "unsupported: {} does not declare feature `{f}` (it cannot open {}'s PostgreSQL store)",
                b.label, a.label
            );
            return (Outcome::Skipped(why), 0.0);
        }
    }
    execute(&[a, b], x.needs, opts, |work| {
        let ctx = CrossCtx { a, b, work, edits: EditLog::default() };
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (x.run)(&ctx)));
        let notes = notes(&ctx.edits, "");
        (annotate(res, notes), ctx.work)
    })
}
