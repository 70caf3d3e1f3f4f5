//! Adapter stderr: reading it line by line, bounded, and the numbered log
//! of what an implementation's processes said.

use std::collections::VecDeque;
use std::io::{BufRead, Read};
use std::sync::Mutex;
use std::time::Duration;

/// Lines of adapter stderr kept for error messages.
pub(super) const STDERR_TAIL: usize = 20;

/// Bytes of one adapter stderr line kept; the rest of a longer line is
/// read and dropped (stderr is free-form, but must not fill the runner).
const STDERR_LINE_KEPT: usize = 4096;

/// The next stderr line, cut to [`STDERR_LINE_KEPT`] bytes (marked with
/// `…`); `None` at end of file.
pub(super) fn read_stderr_line(r: &mut impl BufRead) -> Option<String> {
    let mut kept = Vec::new();
    let mut cut = false;
    loop {
        let mut chunk = Vec::new();
        match r.by_ref().take(STDERR_LINE_KEPT as u64).read_until(b'\n', &mut chunk) {
            Ok(0) | Err(_) if kept.is_empty() && !cut => return None,
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let end = chunk.last() == Some(&b'\n');
        let room = STDERR_LINE_KEPT.saturating_sub(kept.len());
        if chunk.len() > room {
            cut = true;
        }
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if end {
            break;
        }
    }
    let mut line = String::from_utf8_lossy(&kept).trim_end().to_string();
    if cut {
        line.push('…');
    }
    Some(line)
}

/// Lines of adapter stderr an implementation's processes wrote, numbered,
/// the last [`STDERR_LOG`] kept: what an assertion's processes said while
/// it ran is shown with its failure in the reports.
#[derive(Debug, Default)]
pub struct StderrLog(Mutex<(u64, VecDeque<String>)>);

/// Lines kept by a [`StderrLog`].
const STDERR_LOG: usize = 200;

/// Lines of a [`StderrLog`] handed out for one assertion.
const STDERR_FOR_ONE: usize = 20;

impl StderrLog {
    pub(super) fn push(&self, line: &str) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.0 += 1;
        if g.1.len() == STDERR_LOG {
            g.1.pop_front();
        }
        g.1.push_back(line.to_string());
    }

    /// The number of the next line.
    pub fn mark(&self) -> u64 {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// The last lines (at most 20) written since `mark`. The processes'
    /// stderr is read by other threads: lines already written may still be
    /// on their way, so this first waits for the log to stop growing (20 ms
    /// without a new line, at most 250 ms).
    pub fn since(&self, mark: u64) -> Vec<String> {
        let mut seen = self.mark();
        for _ in 0..12 {
            std::thread::sleep(Duration::from_millis(20));
            let now = self.mark();
            if now == seen {
                break;
            }
            seen = now;
        }
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let new = usize::try_from(g.0.saturating_sub(mark)).unwrap_or(usize::MAX).min(g.1.len()).min(STDERR_FOR_ONE);
        g.1.iter().skip(g.1.len() - new).cloned().collect()
    }
}
