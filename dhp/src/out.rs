//! Writing to stdout and stderr without `println!`, which panics when the
//! reader has gone away (`dhp status ROOT | head -1` closes the pipe; Rust
//! ignores SIGPIPE, so the write fails with EPIPE instead of killing us).
//!
//! A closed pipe is not a failure of the command: its outcome stands and
//! the process exits quietly with the code that outcome has (0, or the
//! failure's code). Any other write error on stdout (a full disk behind
//! `> file`, `> /dev/full`) is an `IoError`, exit 11.

use crate::failure::Failure;
use std::io::{ErrorKind, Write};

/// Write `text` and a newline to stdout, flushed. `Ok(false)`: the reader
/// closed the pipe (the caller exits quietly).
pub fn stdout_line(text: &str) -> Result<bool, Failure> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Failure { code: 11, kind: "IoError".into(), message: format!("cannot write to stdout: {e}") }),
    }
}

/// Write `text` and a newline to stderr; a closed or failing stderr is
/// ignored (there is nowhere left to report it).
pub fn stderr_line(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}").and_then(|()| err.flush());
}
