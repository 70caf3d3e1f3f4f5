//! The store commands: dispatch, status, ingest, suspend, resume, decide.

use crate::failure::{bad_flag, usage, Failure};
use crate::{create_mode, open_runner, Output};
use clap::ValueEnum;
use dhp_core::envelope::{self, Budget, BuildOptions};
use dhp_core::status::ApprovalOp;
use dhp_core::store::{with_tx, Mode, OpenMode};
use dhp_core::transport::log;
use dhp_core::{budget, json, Config, Error};
use dhp_workload::census;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, ValueEnum)]
pub enum Decision {
    Approve,
    Deny,
}

#[derive(clap::Args)]
pub struct DispatchArgs {
    /// Store directory; see `--create`.
    root: PathBuf,
    /// Create ROOT and a new store if there is none (without it, a store
    /// is created only in an existing empty directory).
    #[arg(long)]
    create: bool,
    /// An envelope JSON file (verified: a tampered one is refused).
    #[arg(long, conflicts_with_all = ["kind", "census"])]
    envelope: Option<PathBuf>,
    /// Task kind.
    #[arg(long, requires = "schema")]
    kind: Option<String>,
    /// Inputs as a JSON object.
    #[arg(long, default_value = "{}")]
    inputs: String,
    /// Output schema as JSON.
    #[arg(long)]
    schema: Option<String>,
    /// Budget as a JSON object (merged over the defaults): max_steps and
    /// max_attempts integers >= 1, max_spend_usd >= 0, max_wallclock_s > 0.
    #[arg(long)]
    budget: Option<String>,
    /// Capabilities as JSON, e.g. '{"network": ["api.example.com"]}'.
    #[arg(long)]
    capabilities: Option<String>,
    /// Orphan-on-stall retries before dead-lettering (0 to 1000).
    #[arg(long)]
    max_stall_retries: Option<i64>,
    /// Recorded as the envelope's `created_by`.
    #[arg(long, default_value = "dhp-rs")]
    created_by: String,
    /// SDK semantics: wrap inputs as {"inline": ...}, SDK budget defaults.
    #[arg(long)]
    sdk: bool,
    /// Prime census handoff: LO,HI,CHUNK with LO < HI <= 10^10 and
    /// 1 <= CHUNK <= 10^7 (kind, inputs and schema filled in).
    #[arg(long, value_name = "LO,HI,CHUNK", conflicts_with = "kind")]
    census: Option<String>,
    /// Max attempts for --census handoffs (1 to 1000).
    #[arg(long, default_value_t = 25)]
    max_attempts: i64,
}

fn parse_json_arg(what: &str, text: &str) -> Result<Value, Failure> {
    json::parse(text).map_err(|e| usage(format!("--{what}: {e}")))
}

/// Read a file named on the command line (kind `IoError` on failure).
pub fn read_file(path: &Path) -> Result<Vec<u8>, Failure> {
    Ok(std::fs::read(path).map_err(|e| Error::io(path, e))?)
}

/// Build the envelope the flags describe; nothing touches the store yet.
fn envelope_from(a: &DispatchArgs) -> Result<Value, Failure> {
    if let Some(path) = &a.envelope {
        return Ok(json::parse_bytes(&read_file(path)?)?);
    }
    if let Some(spec) = &a.census {
        let spec = census::Spec::parse(spec).map_err(|e| usage(format!("--census: {e}")))?;
        let max_steps = i64::try_from(spec.chunks() + 100).map_err(|_| usage("--census: too many chunks"))?;
        let budget = Budget { max_steps, max_spend_usd: 500.0, max_wallclock_s: 5400.0, max_attempts: a.max_attempts }
            .to_value();
        budget::validate(&budget).map_err(|e| usage(format!("--max-attempts: {e}")))?;
        return Ok(envelope::build(
            census::KIND,
            census::inputs(spec.lo, spec.hi, spec.chunk),
            census::output_schema(),
            BuildOptions { budget: Some(budget), created_by: Some(a.created_by.clone()), ..Default::default() },
        )?);
    }
    let Some(kind) = &a.kind else {
        return Err(usage("give --envelope FILE, --census LO,HI,CHUNK, or --kind K --schema S"));
    };
    let inputs = parse_json_arg("inputs", &a.inputs)?;
    if !inputs.is_object() {
        return Err(Error::validation("inputs must be a JSON object").into());
    }
    let schema = parse_json_arg("schema", a.schema.as_deref().unwrap_or("{}"))?;
    let defaults = if a.sdk { Budget::SDK_DEFAULT } else { Budget::BUILD_DEFAULT };
    let mut budget = defaults.to_value();
    if let Some(b) = &a.budget {
        let given = parse_json_arg("budget", b)?;
        budget::validate(&given).map_err(|e| usage(format!("--budget: {e}")))?;
        if let (Some(m), Value::Object(g)) = (budget.as_object_mut(), given) {
            m.extend(g);
        }
    }
    if let Some(n) = a.max_stall_retries {
        budget::int_in("max_stall_retries", &json!(n), 0, budget::MAX_STALL_RETRIES).map_err(bad_flag)?;
    }
    let capabilities = a.capabilities.as_deref().map(|c| parse_json_arg("capabilities", c)).transpose()?;
    let inputs = if a.sdk { json!({"inline": inputs}) } else { inputs };
    Ok(envelope::build(
        kind,
        inputs,
        schema,
        BuildOptions {
            budget: Some(budget),
            capabilities,
            max_stall_retries: a.max_stall_retries,
            created_by: Some(a.created_by.clone()),
            ..Default::default()
        },
    )?)
}

pub fn dispatch(a: DispatchArgs, cfg: Config) -> Result<Output, Failure> {
    // Validate every flag before a store may be created.
    let env = envelope_from(&a)?;
    let (r, _) = open_runner(&a.root, create_mode(a.create), "dhp-cli", cfg)?;
    let hid = r.dispatch(&env)?;
    Ok((json!({"hid": hid}), hid))
}

/// Which handoffs `dhp status ROOT` lists.
pub struct Page<'a> {
    pub limit: Option<u32>,
    pub after: Option<&'a str>,
}

/// Hids read from the store per query when listing: a listing never
/// holds the whole table's ids at once.
const LIST_BATCH: usize = 1000;

pub fn status(root: &Path, hid: Option<&str>, page: Page<'_>, cfg: Config) -> Result<Output, Failure> {
    if let Some(h) = hid {
        envelope::check_hid(h)?;
        if page.limit.is_some() || page.after.is_some() {
            return Err(usage("--limit and --after page a listing; they do not go with a HID"));
        }
    }
    if let Some(a) = page.after {
        envelope::check_hid(a).map_err(bad_flag)?;
    }
    let (r, _) = open_runner(root, OpenMode::Existing, "dhp-cli", cfg)?;
    if let Some(h) = hid {
        let s = r.status(h)?;
        let text = serde_json::to_string_pretty(&s).unwrap_or_default();
        return Ok((s, text));
    }
    let mut rows = Vec::new();
    let mut table = vec![["handoff", "status", "attempt", "checkpoints", "owner"].map(String::from)];
    let limit = page.limit.map_or(usize::MAX, |n| n as usize);
    let mut after = page.after.map(str::to_string);
    let mut more = false;
    'pages: loop {
        let want = LIST_BATCH.min(limit - rows.len());
        let hids = with_tx(r.store().as_ref(), Mode::Read, |tx| tx.hids_page(after.as_deref(), want + 1))?;
        let last_page = hids.len() <= want;
        for h in hids.into_iter().take(want) {
            // One unreadable row is listed as quarantined, as the supervisor's
            // scan reports it; it does not hide every other handoff.
            let s = match r.status(&h) {
                Ok(s) => s,
                Err(e) if e.concerns_one_row() => {
                    json!({"handoff_id": h, "status": "quarantined", "error": format!("{}: {e}", e.kind())})
                }
                Err(e) => return Err(e.into()),
            };
            // Plain strings: serde_json::Value ignores width and alignment.
            let text = |k: &str| match &s[k] {
                Value::String(v) => v.clone(),
                Value::Null => "-".to_string(),
                v => v.to_string(),
            };
            table.push([
                h.get(..12).unwrap_or(&h).to_string(),
                text("status"),
                text("attempt"),
                text("checkpoints"),
                text("owner"),
            ]);
            rows.push(s);
            after = Some(h);
        }
        if last_page {
            break 'pages;
        }
        if rows.len() >= limit {
            more = true;
            break 'pages;
        }
    }
    let mut out = json!({"handoffs": rows});
    if page.limit.is_some() {
        out["next_after"] = if more { json!(after) } else { Value::Null };
    }
    Ok((out, render_table(&table)))
}

/// Columns padded to their widest cell; numbers right-aligned.
fn render_table(rows: &[[String; 5]]) -> String {
    let mut width = [0usize; 5];
    for row in rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let right = [false, false, true, true, false];
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(
                    |(i, c)| if right[i] { format!("{c:>w$}", w = width[i]) } else { format!("{c:<w$}", w = width[i]) },
                )
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn ingest(root: &Path, logs: &[PathBuf], mode: OpenMode, cfg: Config) -> Result<Output, Failure> {
    // A missing log is an I/O error before any store is created.
    for l in logs {
        std::fs::metadata(l).map_err(|e| Error::io(l, e))?;
    }
    let (r, dir) = open_runner(root, mode, "dhp-ingest", cfg.clone())?;
    // A liveness token of the store marks this process as DHP's: stopped
    // while it holds the write lock, a supervisor's stalled-writer watchdog
    // may SIGKILL it (the ingest is idempotent; run it again). It owns no
    // handoff, so its death orphans nothing.
    let _token = dir.as_deref().and_then(|d| match dhp_core::WorkerId::parse(&ingest_token_name()).and_then(|w| dhp_core::liveness::publish(d, &w)) {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!(error = %e, "dhp ingest: no liveness token (a stop while writing would stall the store)");
            None
        }
    });
    let mut reports = Vec::new();
    let mut lines = Vec::new();
    for l in logs {
        let rep = log::ingest(r.store().as_ref(), l, &cfg)?;
        lines.push(format!(
            "{}: {} ingested ({} new), {} skipped{}",
            rep.handoff_id.get(..12).unwrap_or(&rep.handoff_id),
            rep.checkpoints_ingested,
            rep.checkpoints_new,
            rep.lines_skipped,
            if rep.created { ", created pending" } else { "" }
        ));
        reports.push(serde_json::to_value(&rep).unwrap_or(Value::Null));
    }
    Ok((json!({"reports": reports}), lines.join("\n")))
}

/// The liveness token name of a `dhp ingest` process: `dhp-ingest.PID`.
fn ingest_token_name() -> String {
    format!("dhp-ingest.{}", std::process::id())
}

pub fn suspend(root: &Path, hid: &str, out: &Path, cfg: Config) -> Result<Output, Failure> {
    envelope::check_hid(hid)?;
    // A typo in -o is caught before the handoff is suspended.
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(Error::io(parent, std::io::Error::from(std::io::ErrorKind::NotFound)).into());
    }
    let (r, _) = open_runner(root, OpenMode::Existing, "dhp-cli", cfg)?;
    // A device or pipe (`-o /dev/stdout`) is written in place, after the
    // status change; a file is written whole (temp file, fsync, rename)
    // before the status change commits, so a failed suspend changes nothing.
    let bytes = if out.exists() && !out.is_file() && !out.is_dir() {
        let bundle = r.suspend(hid)?;
        std::fs::write(out, &bundle).map_err(|e| Error::io(out, e))?;
        bundle.len()
    } else {
        r.suspend_to(hid, out)?
    };
    Ok((
        json!({"hid": hid, "bytes": bytes, "out": out}),
        format!("suspended {} → {}", dhp_core::id::short(hid), out.display()),
    ))
}

/// Refuse what is not a bundle at all with a message that says so (the
/// library's message is about versions).
fn check_is_bundle(path: &Path, data: &[u8]) -> Result<(), Failure> {
    let not_bundle = |why: &str| Error::validation(format!("{} is not a DHP bundle: {why}", path.display()));
    if data.iter().all(u8::is_ascii_whitespace) {
        return Err(not_bundle("the file is empty").into());
    }
    match json::parse_bytes(data) {
        Ok(v) if v.get("dhp_bundle").is_some() => Ok(()),
        Ok(_) => Err(not_bundle("no \"dhp_bundle\" version field").into()),
        Err(e) => Err(not_bundle(&e.to_string()).into()),
    }
}

pub fn resume(root: &Path, bundle: &Path, mode: OpenMode, cfg: Config) -> Result<Output, Failure> {
    let data = read_file(bundle)?;
    if data.len() <= cfg.max_envelope_bytes {
        check_is_bundle(bundle, &data)?;
    }
    let (r, _) = open_runner(root, mode, "dhp-cli", cfg)?;
    let hid = r.resume(&data)?;
    Ok((json!({"hid": hid}), hid))
}

/// Decide a pending approval in one write transaction: an unknown id or a
/// decision already taken (or expired) is an error, and nothing changes.
pub fn decide(root: &Path, approval_id: &str, decision: Decision, cfg: Config) -> Result<Output, Failure> {
    let (r, _) = open_runner(root, OpenMode::Existing, "dhp-cli", cfg)?;
    let op = match decision {
        Decision::Approve => ApprovalOp::Approve,
        Decision::Deny => ApprovalOp::Deny,
    };
    let status = op.outcome();
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        let Some(ap) = tx.approval(approval_id)? else {
            return Err(Error::UnknownApproval { approval_id: approval_id.to_string() });
        };
        let now = r.config().clock.store_time();
        let current = ap.status.at(ap.expires_at, now.secs());
        if current.after(op).is_none() {
            return Err(Error::ApprovalDecided { approval_id: approval_id.to_string(), status: current });
        }
        if !tx.decide_approval(approval_id, op, now)? {
            return Err(Error::ApprovalDecided { approval_id: approval_id.to_string(), status: ap.status });
        }
        Ok(())
    })?;
    Ok((json!({"approval_id": approval_id, "recorded": true, "status": status}), format!("{approval_id}: {status}")))
}
