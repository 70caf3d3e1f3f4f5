//! `mutant-transport`: a deliberately broken transport server, to prove
//! that the peer-acks invariant catches a server that acknowledges what it
//! did not write (what a server that acks on ENOSPC would do). It speaks
//! the `dhp transport` wire protocol (hello, envelope, checkpoint, bye;
//! newline-delimited JSON, plaintext) and writes the same log lines, but
//! every checkpoint whose seq is 2 mod 4 is acknowledged and never written.
//!
//! ```text
//! mutant-transport LOGDIR --port P      # prints "listening on 127.0.0.1:PORT"
//! ```
//! Plugs into a round as `dhp-chaos --ship tcp --transport mutant-transport`.

use anyhow::{bail, Context, Result};
use dhp_core::transport::{chain, log};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Seqs written per handoff (so a re-sent line is not appended twice).
type Written = Arc<Mutex<HashMap<String, HashSet<i64>>>>;

fn main() {
    if let Err(e) = run() {
        eprintln!("mutant-transport: {e:#}");
        std::process::exit(2);
    }
}

fn run() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut dir, mut port) = (None, 0u16);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => port = args.next().context("--port needs a value")?.parse().context("--port")?,
            _ if dir.is_none() => dir = Some(PathBuf::from(a)),
            other => bail!("unexpected argument {other:?}"),
        }
    }
    let dir = dir.context("usage: mutant-transport LOGDIR --port P")?;
    std::fs::create_dir_all(&dir)?;
    let l = TcpListener::bind(("127.0.0.1", port)).context("binding")?;
    // one write(2): the harness reads the port while we start
    let line = format!("mutant-transport: listening on {}\n", l.local_addr()?);
    std::io::stderr().write_all(line.as_bytes())?;
    let written: Written = Arc::default();
    for s in l.incoming() {
        let Ok(s) = s else { continue };
        let (dir, written) = (dir.clone(), written.clone());
        std::thread::spawn(move || {
            let _ = serve(s, &dir, &written);
        });
    }
    Ok(())
}

fn append(path: &Path, line: &str) -> Result<()> {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    f.write_all(format!("{line}\n").as_bytes())?;
    Ok(())
}

fn serve(s: TcpStream, dir: &Path, written: &Written) -> Result<()> {
    let mut w = s.try_clone()?;
    let mut hid: Option<String> = None;
    for line in BufReader::new(s).lines() {
        let msg: Value = serde_json::from_str(&line?)?;
        let reply = match (msg["type"].as_str(), &hid) {
            (Some("hello"), None) => {
                hid = msg["handoff_id"].as_str().map(String::from);
                json!({"ok": true, "ack_seq": -1})
            }
            (Some("envelope"), Some(h)) => {
                let path = dir.join(format!("{h}.log"));
                if !path.exists() {
                    append(&path, &log::envelope_line(&msg["envelope"])?)?;
                }
                json!({"ok": true})
            }
            (Some("checkpoint"), Some(h)) => {
                let seq = msg["seq"].as_i64().context("seq")?;
                let hash = msg["state_hash"].as_str().context("state_hash")?;
                let at = msg["at"].as_str().unwrap_or("");
                let line = match chain::claimed_prev(&msg, h, seq)? {
                    Some(prev) => chain::bound_checkpoint_line(h, seq, &msg["state"], hash, Some(prev), at)?,
                    None if msg.get("hid").is_some() => {
                        chain::bound_checkpoint_line(h, seq, &msg["state"], hash, None, at)?
                    }
                    None => log::checkpoint_line(seq, &msg["state"], hash, at)?,
                };
                let mut wr = written.lock().unwrap_or_else(|p| p.into_inner());
                // THE BUG: acknowledged, never written
                if seq % 4 != 2 && wr.entry(h.clone()).or_default().insert(seq) {
                    append(&dir.join(format!("{h}.log")), &line)?;
                }
                json!({"ok": true, "seq": seq})
            }
            (Some("bye"), _) => {
                writeln!(w, "{}", json!({"ok": true}))?;
                return Ok(());
            }
            _ => json!({"ok": false, "error": "unexpected frame"}),
        };
        writeln!(w, "{reply}")?;
    }
    Ok(())
}
