//! `dhp-bench --help` prints its usage on stdout and exits 0 (it exited 2,
//! issue 33 item 18); a command line it cannot run still exits 2.

use std::process::Command;

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dhp-bench"))
}

#[test]
fn help_exits_zero_and_bad_use_two() {
    for flag in ["--help", "-h", "help"] {
        let out = bench().arg(flag).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{flag}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("dhp-bench fixtures --dir D") && text.contains("dhp-bench scale"), "{text}");
    }
    for bad in [&[][..], &["no-such-command"][..]] {
        let out = bench().args(bad).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage:"), "{bad:?}");
    }
}
