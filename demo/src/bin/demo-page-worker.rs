//! `demo-page-worker`: the page worker process of the kill demo (see
//! `demo::pageworker`). Exit 0 on completion, 1 on any failure (the last
//! stderr line says why).

use clap::{Parser, ValueEnum};
use demo::pageworker::{self, Options, Start};
use dhp_core::transport::net::{BufferLog, ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::{FileShipper, Shipper};
use dhp_core::{Config, Runner};
use std::path::PathBuf;

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Mode {
    Claim,
    Recover,
}

#[derive(Parser)]
#[command(name = "demo-page-worker", about = "Fetch a wiki.fetch handoff's pages, checkpointing and shipping each")]
struct Args {
    /// Store root (data directory) of this host.
    #[arg(long)]
    root: PathBuf,
    /// Worker id (lease holder name).
    #[arg(long)]
    id: String,
    /// Host label recorded with each page.
    #[arg(long, default_value = "A")]
    host: String,
    #[arg(value_enum)]
    mode: Mode,
    hid: String,
    /// Base URL of the summary API.
    #[arg(long)]
    base_url: String,
    /// Ship checkpoints over TCP to this `HOST:PORT` (synchronous: each
    /// ship returns once the peer acked it).
    #[arg(long, conflicts_with = "ship_file")]
    ship_tcp: Option<String>,
    /// Local copy of every shipped line (partition buffer) for --ship-tcp.
    #[arg(long, requires = "ship_tcp")]
    ship_buffer: Option<PathBuf>,
    /// Longest one ship waits for the peer's ack (seconds); the TCP shipper
    /// reconnects with backoff meanwhile.
    #[arg(long, default_value_t = 120.0, requires = "ship_tcp")]
    ship_timeout: f64,
    /// Ship checkpoints to a transport log file instead.
    #[arg(long)]
    ship_file: Option<PathBuf>,
    /// Write the dataset here on completion.
    #[arg(long)]
    out: PathBuf,
    /// HTTP timeout per request, seconds.
    #[arg(long, default_value_t = 60.0)]
    http_timeout: f64,
    /// Fetch attempts per page.
    #[arg(long, default_value_t = 3)]
    fetch_tries: u32,
}

fn shipper(a: &Args, cfg: &Config) -> anyhow::Result<Option<Box<dyn Shipper>>> {
    if let Some(p) = &a.ship_file {
        return Ok(Some(Box::new(FileShipper { path: p.clone(), cfg: cfg.clone() })));
    }
    if let Some(addr) = &a.ship_tcp {
        let buffer = a.ship_buffer.clone().unwrap_or_else(|| a.root.join("ship-buffer").join("shipped.log"));
        let opts = ShipperOptions {
            buffer: Some(BufferLog::File(buffer)),
            call_timeout: dhp_core::config::positive_duration("--ship-timeout", a.ship_timeout, 3_600.0)?,
            cfg: cfg.clone(),
            ..ShipperOptions::new(ShipMode::Sync, std::env::var("DHP_TRANSPORT_TOKEN").unwrap_or_default(), cfg.clone())
        };
        return Ok(Some(Box::new(TcpShipper::new(addr, opts)?)));
    }
    Ok(None)
}

fn main() {
    let a = Args::parse();
    let res = (|| -> anyhow::Result<serde_json::Value> {
        let http_timeout = dhp_core::config::positive_duration("--http-timeout", a.http_timeout, 3_600.0)?;
        let cfg = Config::from_env()?;
        let runner = Runner::open(&a.root, &a.id, cfg.clone())?;
        let opts = Options {
            root: a.root.clone(),
            worker_id: a.id.clone(),
            host: a.host.clone(),
            start: if a.mode == Mode::Claim { Start::Claim } else { Start::Recover },
            hid: a.hid.clone(),
            base_url: a.base_url.clone(),
            http_timeout,
            shipper: shipper(&a, &cfg)?,
            out_csv: a.out.clone(),
            fetch_tries: a.fetch_tries,
        };
        pageworker::run(&runner, opts)
    })();
    match res {
        Ok(_) => std::process::exit(0),
        Err(e) => {
            pageworker::emit("error", serde_json::json!({"worker": a.id, "error": format!("{e:#}")}));
            eprintln!("demo-page-worker: {e:#}");
            std::process::exit(1);
        }
    }
}
