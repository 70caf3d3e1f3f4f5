//! The mirror's bounds are dhp-http's shared limits (the one HTTP stack):
//! at most `dhp_http::MAX_CONNECTIONS` connections (fewer under a low
//! RLIMIT_NOFILE), each request head whole within [`HEAD_TIMEOUT`], and at
//! the cap the oldest connection not being answered is closed for the
//! newcomer (`dhp_http::AtCap::MakeRoom`); when every one is being
//! answered (held requests), the newcomer gets 503.

use std::time::Duration;

/// Time from when the server starts waiting for a request (an idle
/// keep-alive connection included) to the end of its head.
pub const HEAD_TIMEOUT: Duration = dhp_http::HEADER_TIMEOUT;
