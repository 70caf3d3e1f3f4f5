//! The request loop: options, one typed request per stdin line, one
//! reply per stdout line, and the ways `--misbehave` breaks the exchange.

use super::misbehave::{self, Misbehave};
use super::{bad, err, Adapter, Handler, R};
use dhp_adapter_proto::{ErrorBody, Op, ReplyLine, RequestLine};
use dhp_core::envelope::now;
use dhp_core::Config;
use serde_json::{json, Map, Value};
use std::io::{BufRead, Write};
use std::time::Duration;

/// Start `sleep 600` in this process's group and append its pid to `file`.
fn spawn_grandchild(file: &str) -> std::io::Result<()> {
    let child = std::process::Command::new("sleep").arg("600").stdin(std::process::Stdio::null()).spawn()?;
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(file)?;
    writeln!(f, "{}", child.id())
}

const USAGE: &str = "[--misbehave MODE:OP] [--spawn-grandchild PIDFILE] [--log-requests] [--without-feature NAME]…";

fn usage(program: &str) -> ! {
    eprintln!("usage: {program} {USAGE}");
    std::process::exit(2);
}

/// `--help`: what the adapter is and how it is configured (exit 0).
fn help(program: &str) {
    println!(
        "{program}: dhp-rs's adapter for dhp-conform (dhp-conform/ADAPTERS.md).\n\n\
usage: {program} {USAGE}\n\n\
Reads one JSON request per line on stdin, answers one JSON reply per line on\n\
stdout, logs on stderr, exits at end of input. The store and its settings come\n\
from the environment (DHP_* variables, as for `dhp`).\n\n\
  --misbehave MODE:OP       break the exchange on one operation (crash, hang,\n\
                            garbage, wrong-id, bad-reply): tests of the runner\n\
  --spawn-grandchild FILE   leave a process behind (its pid appended to FILE)\n\
  --log-requests            one stderr line per request\n\
  --without-feature NAME    leave NAME out of hello's features (e.g. clock-control:\n\
                            the runner then waits in real time)"
    );
}

/// Run the adapter over stdin/stdout with command-line `args` (without
/// the program name). Returns the exit status.
pub fn run(args: impl IntoIterator<Item = String>) -> i32 {
    serve("dhp-adapter", args, |cfg| Box::new(Adapter::new(cfg)))
}

/// The request loop's options.
struct Options {
    misbehave: Option<(Misbehave, String)>,
    log_requests: bool,
    /// Features left out of hello's.
    without: Vec<String>,
}

/// Read the options of [`run`]; `Err` is the exit status to end with
/// (`--help` answered, or a failed `--spawn-grandchild`).
fn options(program: &str, args: impl IntoIterator<Item = String>) -> Result<Options, i32> {
    let mut o = Options { misbehave: None, log_requests: false, without: Vec::new() };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--misbehave" => {
                let spec = args.next().unwrap_or_default();
                o.misbehave = Some(misbehave::parse_misbehave(&spec).unwrap_or_else(|| usage(program)))
            }
            // a bad adapter for the runner's tests: leaves a process behind
            // (appending its pid to PIDFILE) that only a kill of the whole
            // process group ends
            "--spawn-grandchild" => {
                let file = args.next().unwrap_or_else(|| usage(program));
                if let Err(e) = spawn_grandchild(&file) {
                    eprintln!("{program}: --spawn-grandchild: {e}");
                    return Err(2);
                }
            }
            // one stderr line per request: what the runner's reports show
            "--log-requests" => o.log_requests = true,
            // an optional feature left undeclared: the runner's fallback for it
            "--without-feature" => o.without.push(args.next().unwrap_or_else(|| usage(program))),
            "-h" | "--help" => {
                help(program);
                return Err(0);
            }
            _ => usage(program),
        }
    }
    Ok(o)
}

/// The request loop, over stdin/stdout, of the handler `make` builds from
/// the configuration in the environment. `program` names the binary in
/// messages; `args` are the options of [`run`].
pub(crate) fn serve(
    program: &str,
    args: impl IntoIterator<Item = String>,
    make: impl FnOnce(Config) -> Box<dyn Handler>,
) -> i32 {
    let opts = match options(program, args) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{program}: {e}");
            return 2;
        }
    };
    let mut ad = make(cfg);
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        if let Flow::Stop = answer(program, &opts, ad.as_mut(), &line, &mut out) {
            break;
        }
    }
    ad.finish();
    0
}

/// After a line: read the next, or stop.
enum Flow {
    Next,
    Stop,
}

/// Answer one line.
fn answer(program: &str, opts: &Options, ad: &mut dyn Handler, line: &str, out: &mut impl Write) -> Flow {
    let raw: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return write_line(out, &error_reply(0, bad(format!("not JSON: {e}"))), false),
    };
    let id = RequestLine::id_of(&raw);
    // the op as named, also when it names none: what --misbehave and the log go by
    let op = raw.get("op").and_then(Value::as_str).unwrap_or("").to_string();
    let broken = opts.misbehave.as_ref().filter(|(_, target)| misbehave::targets(target, &op)).map(|(how, _)| *how);
    if let Some(flow) = broken.and_then(|how| misbehave_instead(how, id, out)) {
        return flow;
    }
    let res = RequestLine::parse(&raw).map_err(super::AErr::from).and_then(|req| perform(ad, req));
    if opts.log_requests {
        match &res {
            Ok(_) => eprintln!("{program}: {op}: ok"),
            Err(e) => eprintln!("{program}: {op}: {} ({})", e.kind, e.message),
        }
    }
    let mut reply = match res {
        Ok(Value::Object(mut result)) => {
            if op == Op::Hello.as_str() {
                if let Some(f) = result.get_mut("features").and_then(Value::as_array_mut) {
                    f.retain(|x| !opts.without.iter().any(|w| x.as_str() == Some(w.as_str())));
                }
            }
            ReplyLine { id, outcome: Ok(result) }
        }
        Ok(other) => error_reply(id, err("Internal", format!("a result that is not an object: {other}"))),
        Err(e) => error_reply(id, e),
    };
    match broken {
        Some(Misbehave::WrongId) => reply.id = id + 1000,
        Some(Misbehave::BadReply) => reply.outcome = Ok(Map::from_iter([("unexpected".into(), json!("shape"))])),
        _ => {}
    }
    write_line(out, &reply, op == Op::Shutdown.as_str())
}

/// Perform a request: wait for its barrier time, set its clock, answer.
fn perform(ad: &mut dyn Handler, req: RequestLine) -> R {
    // "at" is the adapter's input: a start more than an hour away is refused.
    let wait = match req.at.map(|at| at - now()) {
        Some(d) if d > 0.0 => Some(
            dhp_core::config::duration_from_secs("at (seconds from now)", d, 3_600.0)
                .map_err(|e| err(e.kind(), e.to_string()))?,
        ),
        _ => None,
    };
    let offset = clock_offset(req.clock_offset_s)?;
    if let Some(d) = wait {
        std::thread::sleep(d);
    }
    ad.clock_offset(offset);
    let res = ad.handle(req.request);
    ad.clock_idle();
    res
}

fn error_reply(id: u64, e: super::AErr) -> ReplyLine {
    ReplyLine { id, outcome: Err(ErrorBody { kind: e.kind, message: e.message }) }
}

/// Write a reply; stop after it when `last`, or when stdout is gone.
fn write_line(out: &mut impl Write, reply: &ReplyLine, last: bool) -> Flow {
    match writeln!(out, "{}", reply.to_value()).and_then(|_| out.flush()) {
        Ok(()) if !last => Flow::Next,
        _ => Flow::Stop,
    }
}

/// The misbehaviours that replace the answer (`None`: answer, perhaps
/// spoiled afterwards: wrong-id, bad-reply; or after a huge stderr line).
fn misbehave_instead(how: Misbehave, id: u64, out: &mut impl Write) -> Option<Flow> {
    match how {
        Misbehave::Crash => std::process::exit(70),
        Misbehave::Hang => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        Misbehave::Garbage => {
            let _ = writeln!(out, "Traceback (most recent call last): something went wrong {{");
            let _ = out.flush();
            Some(Flow::Next)
        }
        Misbehave::HugeLine => {
            let piece = vec![b'x'; 1 << 16];
            let _ = write!(out, "{{\"id\": {id}, \"junk\": \"");
            for _ in 0..(1 << 14) {
                if out.write_all(&piece).is_err() {
                    break; // the reader stopped: fine
                }
            }
            let _ = writeln!(out, "\"}}");
            let _ = out.flush();
            Some(Flow::Next)
        }
        Misbehave::HugeStderr => {
            let piece = vec![b'e'; 1 << 16];
            let mut err = std::io::stderr().lock();
            for _ in 0..(1 << 12) {
                if err.write_all(&piece).is_err() {
                    break;
                }
            }
            let _ = writeln!(err);
            None
        }
        Misbehave::WrongId | Misbehave::BadReply => None,
    }
}

/// The request's `clock_offset_s` (seconds the runner moved the clock
/// on; ADAPTERS.md §2): absent, or a finite number from 0 to 10 years.
fn clock_offset(offset: Option<f64>) -> R<Option<f64>> {
    const MAX: f64 = 10.0 * 365.0 * 86_400.0;
    match offset {
        None => Ok(None),
        Some(o) if (0.0..=MAX).contains(&o) => Ok(Some(o)),
        Some(o) => Err(bad(format!("clock_offset_s must be a number of seconds from 0 to {MAX}, not {o}"))),
    }
}
