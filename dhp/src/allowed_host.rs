//! Host names a local HTTP server (`dhp a2a`, `dhp dashboard`) answers
//! to: the `--allow-host` values and the bound address, written once for
//! both servers' Host/Origin guards.

/// `[::1]`-style name of an address (IPv6 literals in brackets).
pub fn ip_name(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// Check an `--allow-host` value: a DNS name or an IP literal, no port;
/// returns it lowercased (an IP in [`ip_name`] form).
pub fn check_allowed_host(name: &str) -> Result<String, String> {
    let n = name.trim().to_ascii_lowercase();
    if let Ok(ip) = n.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>() {
        return Ok(ip_name(ip));
    }
    let ok = !n.is_empty()
        && n.len() <= 253
        && n.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
    if ok {
        Ok(n)
    } else {
        Err(format!("--allow-host {name:?} is not a host name or IP address (give it without a port)"))
    }
}
