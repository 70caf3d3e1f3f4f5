//! The demo's human output: plain lines, and per-worker progress bars
//! (indicatif, as dhp-chaos uses) on a terminal.
//!
//! Human output goes to stdout, or to stderr under `--json` (stdout then
//! carries only the JSON summary). Off a terminal there are no bars: a
//! progress update is printed as a line only when it is a milestone, so
//! logs stay readable.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};

/// Where and how human output is written.
#[derive(Clone)]
pub struct Ui {
    to_stderr: bool,
    tty: bool,
    /// The bar of the worker currently reporting, and its name.
    bar: Option<(String, ProgressBar)>,
}

impl Ui {
    /// Human output on stdout, or on stderr when `json` is set.
    pub fn new(json: bool) -> Ui {
        let tty = if json { std::io::stderr().is_terminal() } else { std::io::stdout().is_terminal() };
        Ui { to_stderr: json, tty, bar: None }
    }

    /// True when output goes to a terminal (bars, colours).
    pub fn is_tty(&self) -> bool {
        self.tty
    }

    fn write(&self, s: &str) {
        if self.to_stderr {
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(s.as_bytes());
            let _ = e.flush();
        } else {
            let mut o = std::io::stdout().lock();
            let _ = o.write_all(s.as_bytes());
            let _ = o.flush();
        }
    }

    /// One line, printed above any live bar.
    pub fn say(&self, line: &str) {
        let text = format!("{line}\n");
        match &self.bar {
            Some((_, b)) => b.suspend(|| self.write(&text)),
            None => self.write(&text),
        }
    }

    /// A worker's progress: `done` of `total` pages, `msg` describing the
    /// last one. On a terminal this moves the worker's bar (a new worker
    /// leaves the previous bar where it stopped); otherwise `line` is printed
    /// when `milestone` is set.
    pub fn progress(&mut self, worker: &str, done: u64, total: u64, msg: &str, line: &str, milestone: bool) {
        if !self.tty {
            if milestone {
                self.say(line);
            }
            return;
        }
        if self.bar.as_ref().is_some_and(|(w, _)| w != worker) {
            self.finish_bar();
        }
        let (_, bar) = self.bar.get_or_insert_with(|| {
            let target = if self.to_stderr { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::stdout() };
            let b = ProgressBar::with_draw_target(Some(total), target);
            b.set_style(
                ProgressStyle::with_template("  {prefix} [{bar:30}] {pos:>3}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("#>."),
            );
            b.set_prefix(worker.to_string());
            (worker.to_string(), b)
        });
        bar.set_length(total);
        bar.set_position(done);
        bar.set_message(msg.to_string());
    }

    /// Leave the current bar on screen where it stopped; later lines go
    /// below it.
    pub fn finish_bar(&mut self) {
        if let Some((_, b)) = self.bar.take() {
            b.abandon();
        }
    }

    /// `s` in ANSI colour `code` on a terminal, plain otherwise.
    pub fn color(&self, code: &str, s: &str) -> String {
        if self.tty {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// A duration for humans, in the unit that shows its digits: µs below a
/// millisecond (so a measured 40 µs does not print as "0.0 ms"), ms below a
/// second, s above.
pub fn fmt_s(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.0} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.1} ms", s * 1000.0)
    } else {
        format!("{s:.2} s")
    }
}

#[cfg(test)]
mod tests {
    use super::fmt_s;

    #[test]
    fn small_durations_keep_their_digits() {
        assert_eq!(fmt_s(0.000_042), "42 µs");
        assert_eq!(fmt_s(0.0123), "12.3 ms");
        assert_eq!(fmt_s(2.5), "2.50 s");
    }
}
