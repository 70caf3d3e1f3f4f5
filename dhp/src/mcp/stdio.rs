//! stdio framing in front of the SDK. The SDK ignores a line that is not
//! JSON (nested deeper than 128 levels included) and drops one longer than
//! 16 MiB without a word, so a client that sent one waits for ever. Here
//! every line is read first (never buffering more than [`MAX_LINE`]) and
//! such a line is answered with a JSON-RPC error (id null): `-32700` for
//! one that does not parse, `-32600` for one that is too long. Every other
//! line goes to the SDK unchanged, which answers the rest (well-formed JSON
//! that is not a request gets its `-32600`).
//!
//! One task owns stdout, so the SDK's frames and these answers never
//! interleave within a line.

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Longest line accepted, its newline included (the SDK's own limit).
pub const MAX_LINE: usize = 16 << 20;
/// Buffer of each pipe between this framing and the SDK.
const PIPE: usize = 64 << 10;

/// The tasks that carry lines; see [`Framing::finish`].
pub struct Framing {
    reader: JoinHandle<()>,
    drain: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Framing {
    /// After the SDK is done: forward what it wrote last, stop reading
    /// stdin (it may still be open) and flush stdout.
    pub async fn finish(self) {
        let _ = self.drain.await;
        self.reader.abort();
        let _ = self.reader.await;
        let _ = self.writer.await;
    }
}

/// The SDK's (input, output) pipes, and the tasks behind them.
pub fn start() -> ((DuplexStream, DuplexStream), Framing) {
    let (sdk_in, feed) = tokio::io::duplex(PIPE);
    let (sdk_out, drain_end) = tokio::io::duplex(PIPE);
    let (tx, rx) = mpsc::channel::<Vec<u8>>(64);
    let writer = tokio::spawn(write_stdout(rx));
    let reader = tokio::spawn(read_stdin(feed, tx.clone()));
    let drain = tokio::spawn(drain(drain_end, tx));
    ((sdk_in, sdk_out), Framing { reader, drain, writer })
}

async fn write_stdout(mut rx: mpsc::Receiver<Vec<u8>>) {
    let mut out = tokio::io::stdout();
    while let Some(line) = rx.recv().await {
        if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
            return;
        }
    }
}

/// The SDK's output, line by line, to stdout.
async fn drain(end: DuplexStream, tx: mpsc::Sender<Vec<u8>>) {
    let mut r = BufReader::new(end);
    loop {
        let mut line = Vec::new();
        match r.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if tx.send(line).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// One line read from stdin.
enum Line {
    /// A whole line (without its newline), or the last one at end of input.
    Text(Vec<u8>),
    /// Longer than [`MAX_LINE`]; dropped while read.
    Oversized,
    Eof,
}

/// Read one line, keeping at most [`MAX_LINE`] bytes of it.
async fn read_line<R: tokio::io::AsyncRead + Unpin>(r: &mut BufReader<R>) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut over = false;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match (over, line.is_empty()) {
                (true, _) => Line::Oversized,
                (false, true) => Line::Eof,
                (false, false) => Line::Text(line),
            });
        }
        let (take, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if !over {
            if line.len() + take > MAX_LINE {
                over = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(&buf[..take]);
            }
        }
        r.consume(take);
        if end {
            if over {
                return Ok(Line::Oversized);
            }
            line.pop();
            return Ok(Line::Text(line));
        }
    }
}

fn error_line(code: i64, message: String) -> Vec<u8> {
    let mut v = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}}).to_string();
    v.push('\n');
    v.into_bytes()
}

/// stdin → the SDK, answering what it would not.
async fn read_stdin(mut feed: DuplexStream, tx: mpsc::Sender<Vec<u8>>) {
    let mut r = BufReader::new(tokio::io::stdin());
    loop {
        let answer = match read_line(&mut r).await {
            Err(e) => {
                tracing::error!("mcp: cannot read stdin: {e}");
                return;
            }
            Ok(Line::Eof) => return,
            Ok(Line::Oversized) => {
                tracing::warn!("mcp: refused a line longer than {MAX_LINE} bytes");
                error_line(-32600, format!("Invalid Request: a line of more than {MAX_LINE} bytes"))
            }
            Ok(Line::Text(mut line)) => {
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                let body = line.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(&line);
                if body.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match serde_json::from_slice::<serde_json::Value>(body) {
                    Ok(_) => {
                        line.push(b'\n');
                        if feed.write_all(&line).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!("mcp: refused a line that is not JSON: {e}");
                        error_line(-32700, format!("Parse error: {e}"))
                    }
                }
            }
        };
        if tx.send(answer).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_bounded() {
        let mut input = b"{\"a\":1}\r\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_LINE + 5));
        input.extend(b"\nlast");
        let mut r = BufReader::new(input.as_slice());
        assert!(matches!(read_line(&mut r).await.unwrap(), Line::Text(l) if l == b"{\"a\":1}\r"));
        assert!(matches!(read_line(&mut r).await.unwrap(), Line::Oversized));
        assert!(matches!(read_line(&mut r).await.unwrap(), Line::Text(l) if l == b"last"));
        assert!(matches!(read_line(&mut r).await.unwrap(), Line::Eof));
    }
}
