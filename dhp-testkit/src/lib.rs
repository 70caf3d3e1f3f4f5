//! # dhp-testkit — plumbing for the harness crates' tests
//!
//! Shared by the tests of dhp-conform, dhp-chaos, the demo and the benches
//! and dhp-core's own: the build locator ([`locate`]: the checkout, the
//! reference's Python, the `dhp` binary), the store helpers that simulate
//! time passing ([`store`]), PostgreSQL for tests ([`pg`]), the reference and store dumps for
//! integration tests ([`helpers`]), torn store states
//! ([`torn`]) and the fuzz targets' bodies ([`fuzzing`]) —
//! test machinery that left the protocol library (issue 46). The chaos
//! harness, the demo and dhp-rs's adapter use the locator and the store
//! helpers at run time too. Everything here fails loudly with the fix
//! instead of skipping: a test never passes because something was missing.
//!
//! ```
//! use std::time::Duration;
//! let (_tmp, root) = dhp_testkit::temp_store();
//! assert!(root.is_dir());
//! let mut n = 0;
//! dhp_testkit::wait_until(Duration::from_secs(5), "the counter reaches 3", || {
//!     n += 1;
//!     n >= 3
//! });
//! ```

pub mod fuzzing;
pub mod helpers;
pub mod pg;
pub mod sizes;
pub mod store;
pub mod torn;

// The part that links no implementation lives in dhp-kit (a judge uses it
// without dhp-core); re-exported so the tests keep one name for it.
pub use dhp_kit::{
    alive, checkout, dhp_bin, doc_table, faketime, http_limits, locate, pg_url, python, temp_store, wait_until,
    workspace_bin, ProcessGroup,
};
