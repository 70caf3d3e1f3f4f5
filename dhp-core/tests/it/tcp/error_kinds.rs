//! Transport failures say which part failed (`TransportKind`), so a caller
//! can tell a bad argument from a refusing peer or a log that is not a log
//! without reading the message; the CLI kind and exit code stay
//! `TransportError`, 10.

use dhp_core::transport::log;
use dhp_core::transport::net::{ShipperOptions, TcpShipper};
use dhp_core::{Config, Error, Runner, TransportKind};

#[test]
fn a_ship_to_that_is_not_host_port_is_an_address_error() {
    for addr in ["nonsense", ":9", "host:0", "host:99999"] {
        let e = TcpShipper::new(addr, ShipperOptions::default()).unwrap_err();
        assert_eq!(e.transport_kind(), Some(TransportKind::Address), "{addr}: {e:?}");
        assert_eq!((e.kind(), e.exit_code()), ("TransportError", 10));
    }
}

#[test]
fn a_log_without_an_envelope_header_is_a_log_error() {
    let dir = tempfile::tempdir().unwrap();
    let r = Runner::open(dir.path(), "w1", Config::default()).unwrap();
    let path = dir.path().join("x.log");
    std::fs::write(&path, "{\"type\": \"checkpoint\", \"seq\": 0}\n").unwrap();
    let e = log::ingest(r.store().as_ref(), &path, &Config::default()).unwrap_err();
    assert!(matches!(e, Error::Transport { kind: TransportKind::Log, .. }), "{e:?}");
    assert_eq!(e.transport_kind(), Some(TransportKind::Log));
}

#[test]
fn other_errors_have_no_transport_kind() {
    assert_eq!(Error::validation("x").transport_kind(), None);
}
