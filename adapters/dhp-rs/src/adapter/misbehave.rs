//! `--misbehave MODE:OP`: ways to break the adapter exchange itself (bad
//! adapters for the runner's own tests: crash, hang, garbage, wrong-id,
//! bad-reply, huge lines).

/// Ways to break the exchange itself (bad adapters), on one op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehave {
    /// Exit without answering.
    Crash,
    /// Never answer.
    Hang,
    /// Print a line that is not JSON instead of the answer.
    Garbage,
    /// Answer with another request's id.
    WrongId,
    /// Answer with a result its schema rejects.
    BadReply,
    /// Answer with one 1 GiB line (written in pieces: the adapter never
    /// holds it, so only a runner that buffers it grows).
    HugeLine,
    /// Print one 256 MiB line on stderr, then answer normally.
    HugeStderr,
}

/// Does a `--misbehave MODE:TARGET` apply to `op`? `*` is every op but
/// `hello` (a process that shakes hands, then misbehaves).
pub fn targets(target: &str, op: &str) -> bool {
    target == op || (target == "*" && op != "hello")
}

/// Parse `--misbehave MODE:TARGET` into the mode and the target op;
/// `None` for an unknown mode or no `:`.
pub fn parse_misbehave(spec: &str) -> Option<(Misbehave, String)> {
    let (mode, op) = spec.split_once(':')?;
    let m = match mode {
        "crash" => Misbehave::Crash,
        "hang" => Misbehave::Hang,
        "garbage" => Misbehave::Garbage,
        "wrong-id" => Misbehave::WrongId,
        "bad-reply" => Misbehave::BadReply,
        "huge-line" => Misbehave::HugeLine,
        "huge-stderr" => Misbehave::HugeStderr,
        _ => return None,
    };
    Some((m, op.to_string()))
}
