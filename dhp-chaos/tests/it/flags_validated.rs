//! Every timing and rate flag is checked before anything starts: zero,
//! NaN, infinite or out-of-range values are a usage error (exit 2) that
//! names the flag, and no run directory is made. (`--lease-interval 0`,
//! `--scan nan` and `--lease-max-missed 0` used to start a round whose
//! supervisors died at start and were respawned ~260 times a second.)
use crate::common::*;

#[test]
fn bad_timings_and_rates_are_usage_errors() {
    let cases: &[(&str, &str)] = &[
        ("--lease-interval", "0"),
        ("--lease-interval", "nan"),
        ("--lease-interval", "inf"),
        ("--lease-interval", "-1"),
        ("--scan", "nan"),
        ("--scan", "0"),
        ("--leader-ttl", "1e308"),
        ("--lease-max-missed", "0"),
        ("--lease-max-missed", "1"),
        ("--pace", "nan"),
        ("--grace", "inf"),
        ("--fault-seconds", "0"),
        ("--pause-max", "nan"),
        ("--supervisor-restart-max", "-1"),
        ("--failpoint-rate", "1.5"),
        ("--race-rate", "nan"),
        ("--clock", "2"),
        ("--clock-rate", "0.5"),
        ("--fault-interval", "0,1"),
        ("--fault-interval", "nan,1"),
        ("--budget-minutes", "-1"),
        ("--handoffs", "0"),
        ("--chunk", "0"),
        ("--supervisor-count", "1"),
        ("--max-attempts", "0"),
    ];
    for (i, (flag, value)) in cases.iter().enumerate() {
        let arg = format!("{flag}={value}");
        let r = run_chaos(&format!("flag-{i}"), &[&arg]);
        assert_eq!(r.code, 2, "{flag} {value} must be refused\n{}", r.dump());
        assert!(r.stderr.contains(flag), "{flag} {value}: the error names the flag\n{}", r.dump());
        assert!(!r.out.exists(), "{flag} {value} created {}", r.out.display());
    }
}
