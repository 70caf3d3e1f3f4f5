//! Replays the committed `adapter` fuzz corpus and crash reproducers
//! (fuzz/corpus/adapter, fuzz/regressions/adapter) through
//! dhp_conform::fuzzing::adapter on the stable toolchain.

#[test]
fn adapter_corpus_replays() {
    let fuzz = dhp_testkit::checkout().join("fuzz");
    let mut n = 0;
    for dir in [fuzz.join("corpus/adapter"), fuzz.join("regressions/adapter")] {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let data = std::fs::read(e.path()).unwrap();
            assert!(
                std::panic::catch_unwind(|| dhp_conform::fuzzing::adapter(&data)).is_ok(),
                "{} crashes",
                e.path().display()
            );
            n += 1;
        }
    }
    assert!(n >= 2, "adapter corpus missing (scripts/pyref/fuzz_seeds.py)");
}
