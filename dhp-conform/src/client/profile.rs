//! The environment profiles adapter processes are started with.

/// Environment profile an adapter process is started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Reference lease timing (2 s × 3), tight size limits.
    Default,
    /// Leases of 0.5 s × 2 for assertions that let real time pass.
    ShortLease,
    /// A 4 KiB line limit, which a checkpoint line can reach (in the
    /// default profile the checkpoint limit keeps every line far below it).
    ShortLines,
}

impl Profile {
    /// The `DHP_*` variables of this profile. Every other `DHP_*` variable
    /// of the runner's environment is removed, so results do not depend on
    /// the caller's shell.
    pub fn env(self) -> Vec<(&'static str, &'static str)> {
        let mut env = vec![
            ("DHP_MAX_CHECKPOINT_BYTES", "65536"),
            ("DHP_MAX_RESULT_BYTES", "65536"),
            ("DHP_MAX_ENVELOPE_BYTES", "262144"),
            ("DHP_TRANSPORT_MAX_LINE_BYTES", "262144"),
        ];
        match self {
            Profile::Default => {}
            Profile::ShortLease => {
                env.push(("DHP_LEASE_INTERVAL_S", "0.5"));
                env.push(("DHP_LEASE_MAX_MISSED", "2"));
            }
            Profile::ShortLines => env[3].1 = "4096",
        }
        env
    }
}
