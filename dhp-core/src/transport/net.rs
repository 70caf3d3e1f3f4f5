//! TCP checkpoint shipping (docs/PROTOCOL.md §9): a server that appends shipped
//! lines to `<logdir>/<hid>.log`, and a [`Shipper`](super::Shipper) that
//! sends them, wire-compatible with the reference's `dhp.net`
//! (`TransportServer`, `NetShipper`).
//!
//! Newline-delimited JSON both ways, every frame written as Python
//! `json.dumps(obj, sort_keys=True)`:
//!
//! ```text
//! C → S  {"handoff_id": H, "token": T, "type": "hello"}
//! S → C  {"ack_seq": N, "ok": true}          (highest seq held, -1 if none)
//!      | {"error": "...", "ok": false}
//! C → S  {"envelope": {...}, "type": "envelope"}                → {"ok": true}
//! C → S  {"at": ..., "seq": N, "state": {...}, "state_hash": ..., "type": "checkpoint"}
//!                                                               → {"ok": true, "seq": N}
//! C → S  {"type": "bye"}                                        → {"ok": true}
//! ```
//!
//! A checkpoint frame is exactly a transport-log line, so the shipper sends
//! the lines it also writes to its local buffer log.
//!
//! Where this goes beyond the reference:
//! - the server verifies that the envelope and any `handoff_id` carried by
//!   a checkpoint frame belong to the handoff named in the hello, refuses
//!   checkpoints before an envelope header exists (ingest would skip them),
//!   and does not append a seq the log already holds;
//! - lines are capped at `DHP_TRANSPORT_MAX_LINE_BYTES` while reading, each
//!   connection has an idle timeout, and one slow or hostile client cannot
//!   stall the others;
//! - the shipper pipelines frames, reconnects with exponential backoff,
//!   resumes from the server's `ack_seq` and replays what the server lacks
//!   from its local buffer log; every wait is bounded.

mod direct_ack;
mod gate;
mod journal;
mod logdir_fs;
mod seqset;
mod server;
mod shipper;
mod sync_stats;
mod tls;
mod trim;

pub use gate::nofile_soft;
pub use server::{prepare, run, Prepared, ServerConfig, ServerStats, StatsHandle};
pub use shipper::{BufferLog, ShipMode, ShipperOptions, TcpShipper};
pub use tls::{ClientTls, ServerTls};

/// The reference's default port.
pub const DEFAULT_PORT: u16 = 8471;

/// Longest reply the shipper accepts from a server (replies are tiny; this
/// only bounds what a hostile peer can make us buffer).
pub(crate) const MAX_REPLY_BYTES: usize = 64 * 1024;

/// What reading one frame produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A complete line (without its newline) is in the buffer.
    Line,
    /// The peer closed the connection between frames.
    Eof,
    /// The peer closed the connection in the middle of a line (discarded).
    Partial,
    /// The line exceeded the cap; nothing beyond the cap was buffered, and
    /// the line was consumed through its newline.
    TooLong,
    /// The line exceeds the cap and its rest is still unread.
    Overrun,
}

/// Would a line whose content is `len` bytes (newline not counted) exceed
/// `max` (which, as in the log, counts the newline)?
pub(crate) fn over_cap(len: usize, max: usize) -> bool {
    len.saturating_add(1) > max
}

/// One buffered chunk `avail` of a frame being read into `buf`: how many
/// bytes to consume, and the frame if this chunk ends it. Shared by the
/// async and blocking readers.
fn frame_step(buf: &mut Vec<u8>, avail: &[u8], max: usize) -> (Option<Frame>, usize) {
    if avail.is_empty() {
        return (Some(if buf.is_empty() { Frame::Eof } else { Frame::Partial }), 0);
    }
    if let Some(i) = avail.iter().position(|b| *b == b'\n') {
        if over_cap(buf.len() + i, max) {
            return (Some(Frame::TooLong), i + 1);
        }
        buf.extend_from_slice(&avail[..i]);
        return (Some(Frame::Line), i + 1);
    }
    if over_cap(buf.len() + avail.len(), max) {
        return (Some(Frame::Overrun), 0);
    }
    buf.extend_from_slice(avail);
    (None, avail.len())
}

/// Read one `\n`-terminated line into `buf` (cleared first), never holding
/// more than `max` bytes of it.
pub(crate) async fn read_frame_async<R>(r: &mut R, buf: &mut Vec<u8>, max: usize) -> std::io::Result<Frame>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    use tokio::io::AsyncBufReadExt;
    buf.clear();
    loop {
        let avail = r.fill_buf().await?;
        let (frame, used) = frame_step(buf, avail, max);
        r.consume(used);
        if let Some(f) = frame {
            return Ok(f);
        }
    }
}

/// Discard the rest of an overlong line, up to `limit` bytes; true when
/// its newline was reached (the stream is in sync again).
pub(crate) async fn skip_line_async<R>(r: &mut R, limit: usize) -> std::io::Result<bool>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    use tokio::io::AsyncBufReadExt;
    let mut skipped = 0usize;
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            return Ok(false);
        }
        if let Some(i) = avail.iter().position(|b| *b == b'\n') {
            r.consume(i + 1);
            return Ok(true);
        }
        let n = avail.len();
        r.consume(n);
        skipped += n;
        if skipped > limit {
            return Ok(false);
        }
    }
}

/// Blocking twin of [`read_frame_async`].
pub(crate) fn read_frame_sync<R: std::io::BufRead>(r: &mut R, buf: &mut Vec<u8>, max: usize) -> std::io::Result<Frame> {
    buf.clear();
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let (frame, used) = frame_step(buf, avail, max);
        r.consume(used);
        if let Some(f) = frame {
            return Ok(f);
        }
    }
}

/// Appends lines to one file through a handle kept open between appends.
#[derive(Debug)]
pub(crate) struct Appender {
    pub(crate) path: std::path::PathBuf,
    file: Option<std::fs::File>,
    /// The file ends in a torn line (a crash mid-write): the next append
    /// first ends it, so the new line stays intact and the torn one is
    /// skipped at ingest.
    pub(crate) torn: bool,
    /// Open without following a link, and only a regular file (the
    /// server's logs, [`logdir_fs`]).
    no_follow: bool,
}

impl Appender {
    pub(crate) fn new(path: std::path::PathBuf, torn: bool) -> Self {
        Appender { path, file: None, torn, no_follow: false }
    }

    /// An appender that refuses a link or a non-regular file at `path`
    /// instead of writing through it (the transport server's logs).
    pub(crate) fn no_follow(path: std::path::PathBuf) -> Self {
        Appender { path, file: None, torn: false, no_follow: true }
    }

    /// Forget the handle (the file was replaced or failed).
    pub(crate) fn reset(&mut self) {
        self.file = None;
    }

    /// `fsync` the data appended so far (a no-op before the first append).
    pub(crate) fn sync_data(&self) -> crate::Result<()> {
        match &self.file {
            Some(f) => f.sync_data().map_err(|e| crate::Error::io(&self.path, e)),
            None => Ok(()),
        }
    }

    /// Append `line` plus a newline with one `write(2)`; returns the bytes
    /// written.
    pub(crate) fn append(&mut self, line: &[u8]) -> crate::Result<u64> {
        use std::io::Write;
        let path = &self.path;
        if self.file.is_none() {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| crate::Error::io(parent, e))?;
            }
            let mut opts = std::fs::OpenOptions::new();
            opts.create(true).append(true);
            let f = if self.no_follow {
                logdir_fs::open(&mut opts, path)?
            } else {
                opts.open(path).map_err(|e| crate::Error::io(path, e))?
            };
            self.file = Some(f);
        }
        let mut buf = Vec::with_capacity(line.len() + 2);
        if self.torn {
            buf.push(b'\n');
        }
        buf.extend_from_slice(line);
        buf.push(b'\n');
        let r = self.file.as_mut().map(|f| f.write_all(&buf));
        match r {
            Some(Ok(())) => {
                self.torn = false;
                Ok(buf.len() as u64)
            }
            Some(Err(e)) => {
                self.file = None;
                Err(crate::Error::io(path, e))
            }
            None => Ok(0),
        }
    }
}

/// Does a non-empty file end without a newline (a torn last line)?
pub(crate) fn ends_torn(data: &[u8]) -> bool {
    data.last().is_some_and(|b| *b != b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_frames_respect_the_cap() {
        let mut buf = Vec::new();
        let mut r = std::io::BufReader::with_capacity(4, &b"abc\ndefghijk\nxy"[..]);
        assert_eq!(read_frame_sync(&mut r, &mut buf, 8).unwrap(), Frame::Line);
        assert_eq!(buf, b"abc");
        assert_eq!(read_frame_sync(&mut r, &mut buf, 8).unwrap(), Frame::Overrun);
        assert!(buf.len() < 8);
        let mut r = std::io::BufReader::new(&b"1234567\nxy"[..]);
        assert_eq!(read_frame_sync(&mut r, &mut buf, 8).unwrap(), Frame::Line);
        assert_eq!(read_frame_sync(&mut r, &mut buf, 8).unwrap(), Frame::Partial);
        assert_eq!(read_frame_sync(&mut r, &mut buf, 8).unwrap(), Frame::Eof);
        let mut r = std::io::BufReader::new(&b"12345678\n"[..]);
        assert_eq!(read_frame_sync(&mut r, &mut buf, 8).unwrap(), Frame::TooLong);
    }

    #[tokio::test]
    async fn async_frames_respect_the_cap() {
        let mut buf = Vec::new();
        let mut r = tokio::io::BufReader::with_capacity(3, &b"ab\n0123456789\nok\nhalf"[..]);
        assert_eq!(read_frame_async(&mut r, &mut buf, 6).await.unwrap(), Frame::Line);
        assert_eq!(buf, b"ab");
        assert_eq!(read_frame_async(&mut r, &mut buf, 6).await.unwrap(), Frame::Overrun);
        assert!(buf.len() <= 6);
        assert!(skip_line_async(&mut r, 100).await.unwrap());
        assert_eq!(read_frame_async(&mut r, &mut buf, 6).await.unwrap(), Frame::Line);
        assert_eq!(buf, b"ok");
        assert_eq!(read_frame_async(&mut r, &mut buf, 6).await.unwrap(), Frame::Partial);
        let mut r = tokio::io::BufReader::with_capacity(3, &b"0123456789abcdef\nz\n"[..]);
        assert_eq!(read_frame_async(&mut r, &mut buf, 6).await.unwrap(), Frame::Overrun);
        assert!(!skip_line_async(&mut r, 4).await.unwrap());
    }

    #[test]
    fn torn_tail_is_terminated() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.log");
        std::fs::write(&p, b"{\"type\": \"checkpoint\", \"se").unwrap();
        assert!(ends_torn(&std::fs::read(&p).unwrap()));
        let mut a = Appender::new(p.clone(), true);
        a.append(b"{\"type\": \"bye\"}").unwrap();
        a.append(b"{}").unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().nth(1), Some("{\"type\": \"bye\"}"));
        assert_eq!(text.lines().nth(2), Some("{}"));
        assert!(!ends_torn(text.as_bytes()));
    }
}
