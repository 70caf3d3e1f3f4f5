//! The library's error. The binary (`main.rs`) reports
//! it through anyhow with `{:#}`, which prints each variant's message and
//! then its source's, so a message does not repeat its source. The
//! modules that still build their errors with anyhow internally are listed
//! in docs/chaos/running.md ("Errors").

use std::path::PathBuf;

/// An error of the dhp-chaos library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file of the round (history, meta, timeline).
    #[error("{doing} {}", path.display())]
    Io {
        /// What the harness was doing ("reading history", "writing").
        doing: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A round file that is not the JSON it should be.
    #[error("{} is not JSON", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A program that could not be started.
    #[error("running {}", program.display())]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The `dhp` binary or the Python interpreter not found.
    #[error(transparent)]
    Locate(#[from] dhp_kit::locate::LocateError),
    /// Something the round needs from this machine is missing or wrong
    /// (libfaketime, the reference package).
    #[error("{problem}")]
    Environment {
        /// What is missing, and how to get it.
        problem: String,
    },
    /// A bad setting (a `DHP_CHAOS_*` variable).
    #[error("{setting}={value} {problem}")]
    Config {
        /// The variable.
        setting: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A SQLite store the harness reads or instruments (the store audit).
    #[error("{doing}")]
    Sqlite {
        /// What the harness was doing, and on which file.
        doing: String,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// A PostgreSQL store the harness reads or instruments.
    #[error("{doing}")]
    Postgres {
        /// What the harness was doing.
        doing: String,
        /// The client library's error.
        #[source]
        source: postgres::Error,
    },
    /// A round's store or report that the checker cannot read as one.
    #[error("{}: {problem}", path.display())]
    CheckerInput {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A stored envelope that is not JSON.
    #[error("envelope of {hid}")]
    Envelope {
        /// The handoff.
        hid: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A command-line value that names nothing the harness knows.
    #[error("{0}")]
    Usage(String),
    /// The harness is tearing down (a signal): nothing new is started.
    #[error("dhp-chaos is shutting down (interrupted): not starting anything new")]
    ShuttingDown,
}

impl Error {
    /// The message and every source's, joined by `: ` (what anyhow's `{:#}`
    /// prints), for a finding that quotes the error.
    pub fn chain(&self) -> String {
        let mut s = self.to_string();
        let mut src = std::error::Error::source(self);
        while let Some(e) = src {
            s = format!("{s}: {e}");
            src = e.source();
        }
        s
    }

    /// An [`Error::Io`] maker for `map_err`.
    pub fn io(doing: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { doing, path, source }
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// As the binaries print it (`{:#}` through anyhow): each part once.
    #[test]
    fn the_chain_names_the_file_and_the_cause_once() {
        let e = crate::hist::load(std::path::Path::new("/nonexistent/history.jsonl")).unwrap_err();
        assert!(matches!(&e, Error::Io { doing: "reading history", .. }), "{e:?}");
        let text = format!("{:#}", anyhow::Error::from(e));
        assert!(text.starts_with("reading history /nonexistent/history.jsonl: "), "{text}");
        assert_eq!(text.matches("No such file").count(), 1, "{text}");
        let e = crate::hist::load(std::path::Path::new("/nonexistent/history.jsonl")).unwrap_err();
        assert_eq!(e.chain(), text, "chain() is what the binaries print");
    }
}
