//! The one failure format of `dhp`: a line `dhp: <Kind>: <message>` on
//! stderr, an exit code from the documented taxonomy (`docs/cli.md`), and
//! with `--json` a JSON object `{"ok": false, "error_kind", "error"}` on
//! stdout. Argument errors from clap go through the same path.

use dhp_core::Error;
use serde_json::json;

/// Exit code of a usage error (bad flags, bad JSON arguments).
pub const USAGE_EXIT: i32 = 2;

/// A failure with its exit code and kind.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub kind: String,
    pub message: String,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure { code: e.exit_code(), kind: e.kind().to_string(), message: e.to_string() }
    }
}

/// A usage error (exit 2).
pub fn usage(msg: impl Into<String>) -> Failure {
    Failure { code: USAGE_EXIT, kind: "UsageError".into(), message: msg.into() }
}

/// A bad flag value found by a library check: the library's message, as a
/// usage error (the user typed it on this command line).
pub fn bad_flag(e: Error) -> Failure {
    usage(e.to_string())
}

impl Failure {
    /// Print in the documented format and exit with the failure's code.
    pub fn exit(self, as_json: bool) -> ! {
        // whatever built the message, no secret of a store location leaves
        let message = dhp_core::store::location::mask_secrets(&one_line(&self.message));
        // Already failing: a closed stdout or stderr changes neither the
        // outcome nor the exit code (crate::out).
        if as_json {
            let _ =
                crate::out::stdout_line(&json!({"ok": false, "error_kind": self.kind, "error": message}).to_string());
        }
        crate::out::stderr_line(&format!("dhp: {}: {message}", self.kind));
        std::process::exit(self.code)
    }
}

/// Collapse a message to one line (clap and OS errors may span several).
fn one_line(msg: &str) -> String {
    msg.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Turn a clap parse error into a [`Failure`], or `None` for `--help` and
/// `--version`, which print as usual and exit 0.
pub fn from_clap(e: &clap::Error) -> Option<Failure> {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => None,
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            Some(usage("no command given (see `dhp --help`)"))
        }
        _ => {
            // clap's text: "error: <what>\n[  <details>\n]\n  tip: …\n\nUsage: …";
            // keep the first paragraph (its plain rendering has no colour
            // codes), joined into one line.
            let text = e.render().to_string();
            let first: Vec<&str> =
                text.lines().map(str::trim).skip_while(|l| l.is_empty()).take_while(|l| !l.is_empty()).collect();
            let first = first.join(" ");
            let first = first.strip_prefix("error: ").unwrap_or(&first);
            Some(usage(format!("{first} (see `dhp --help`)")))
        }
    }
}

/// Whether the raw command line asks for JSON output (clap could not tell
/// us: it failed).
pub fn wants_json(args: &[std::ffi::OsString]) -> bool {
    args.iter().skip(1).take_while(|a| *a != "--").any(|a| a == "--json")
}
