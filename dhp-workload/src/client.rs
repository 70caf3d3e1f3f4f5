//! What a client of a harness's workload service and the service agree
//! on; the client itself is the crate dhp-workload-client (the judge,
//! dhp-chaos, needs only [`CREDENTIAL_ENV`], not an HTTP client).

/// The environment variable holding this process's credential for the
/// service (its own, given by the harness at spawn; sent as
/// `Authorization: Bearer`, never in the URL).
pub const CREDENTIAL_ENV: &str = "DHP_WORKLOAD_CREDENTIAL";
