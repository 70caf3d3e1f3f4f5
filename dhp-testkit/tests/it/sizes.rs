//! The workspace's size check (issue 46, item 7), run by scripts/test.sh
//! with the rest of the tests (and alone by `scripts/sizes.sh`): no
//! non-test `.rs` file over 700 lines, no function over 120, except the
//! entries of `scripts/sizes-allowlist.txt`, which may only shrink.

use dhp_testkit::sizes::{judge, offenders, parse_allowlist};

#[test]
fn no_file_or_function_grows_past_the_limits() {
    let root = dhp_testkit::checkout();
    let list = root.join("scripts/sizes-allowlist.txt");
    let text = std::fs::read_to_string(&list).unwrap_or_else(|e| panic!("{}: {e}", list.display()));
    let allowed = parse_allowlist(&text).unwrap_or_else(|e| panic!("{}: {e}", list.display()));
    let found = offenders(&root).expect("read the workspace's sources");
    let problems = judge(&found, &allowed);
    let current: Vec<String> = found.iter().map(|o| o.entry()).collect();
    assert!(
        problems.is_empty(),
        "size check ({}):\n  {}\n\nevery offender today:\n{}",
        list.display(),
        problems.join("\n  "),
        current.join("\n")
    );
}
