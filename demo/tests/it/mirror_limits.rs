//! The mirror is the one HTTP stack (dhp-http) under the shared limits, as
//! every server of the project: an over-large head is 431, an over-large
//! body 413, and over the cap the oldest idle connection makes room.
use demo::mirror::{Mirror, MirrorConfig, SUMMARY_PREFIX};
use dhp_testkit::http_limits::{body_too_large_is_413, head_too_large_is_431, over_the_cap};
use std::time::Duration;

#[test]
fn the_mirror_refuses_over_large_requests_and_makes_room_like_every_server() {
    let cfg = MirrorConfig {
        seed: 1,
        titles: vec!["Alan_Turing".into()],
        min_delay_ms: 0,
        max_delay_ms: 1,
        hold: None,
        hold_timeout: Duration::from_secs(1),
    };
    let m = Mirror::start(cfg, vec![Mirror::loopback_listener().unwrap()]).unwrap();
    let addr = m.addrs()[0];
    let page = format!("{SUMMARY_PREFIX}Alan_Turing");
    head_too_large_is_431(addr, &page);
    body_too_large_is_413(addr, &page);
    let cap = dhp_http::MAX_CONNECTIONS.min(dhp_http::descriptor_budget());
    drop(over_the_cap(addr, &page, cap + 2, true));
    // the refused requests never reached the mirror's counters
    assert_eq!(m.counts()["Alan_Turing"], 1);
    assert_eq!(m.unknown_requests(), 0);
}
