#!/usr/bin/env bash
# Which of the mutation run's mutants the conformance suite never reaches.
#
# Builds the suite and dhp-core with LLVM source-based coverage
# (-C instrument-coverage, in its own target directory), runs the suite
# (dhp-conform/tests/it/protocol_suite.rs, exactly as the mutation run does)
# RUNS times, and reads the line counts of dhp-core's sources from every
# binary that links dhp-core (the suite's test binary, dhp-conform, and the
# adapter it starts for "ours"). A mutant whose line is instrumented and was
# executed by none of the runs changes nothing the suite can see: the
# program runs the same instructions as unmutated, so the suite passes.
# Such a mutant is a survivor for certain; mutation_score.sh does not spend
# a build and a suite run on it (mutation testing tools call it "no
# coverage"), and mutation_summary.py counts it as missed: it needs a note
# (not observable) or an assertion, like any other survivor.
#
#   scripts/mutation_reach.sh         # writes dhp-conform/mutation/reach.tsv
#
# reach.tsv: per mutant of all-mutants.txt, the execution count of its line
# summed over the runs ("-" where the line carries no counter: such a mutant
# is tested, never assumed). Needs the llvm-tools component
# (`rustup component add llvm-tools`) and the reference venv.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=dhp-conform/mutation
RUNS="${REACH_RUNS:-2}"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "REACH_RUNS must be a positive integer, got '$RUNS'" >&2; exit 2; }
export CARGO_TARGET_DIR="${REACH_TARGET_DIR:-$PWD/target/reach}"
tools="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
for t in llvm-profdata llvm-cov; do
    [[ -x "$tools/$t" ]] || { echo "no $t in $tools: rustup component add llvm-tools" >&2; exit 2; }
done
export DHP_PYTHON="${DHP_PYTHON:-$PWD/.venv/bin/python}"
[[ -x "$DHP_PYTHON" ]] || { echo "no reference interpreter at $DHP_PYTHON (bash scripts/setup.sh)" >&2; exit 2; }
[[ -s "$OUT/all-mutants.txt" ]] || { echo "no $OUT/all-mutants.txt: run scripts/mutation_score.sh --list first" >&2; exit 2; }

# Counter relocation lets the profile runtime keep its counters in the
# profile file itself (continuous mode, `%c` below): a process the suite
# SIGKILLs still leaves every line it ran on record.
export RUSTFLAGS="${RUSTFLAGS:-} -C instrument-coverage -C llvm-args=-runtime-counter-relocation"
prof=$(mktemp -d)
trap 'rm -rf "$prof"' EXIT
# build scripts and proc macros are instrumented too: their profiles go
# aside, not into the checkout
suite=$(LLVM_PROFILE_FILE="$prof/build/%p-%m.profraw" cargo build -p dhp-adapter --bin dhp-adapter >&2 && cargo test -p dhp-conform --test it --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "it" and m.get("executable"):
        print(m["executable"])')
[[ -x "$suite" ]] || { echo "building the instrumented suite failed" >&2; exit 1; }
bins=("$suite" "$CARGO_TARGET_DIR/debug/dhp-conform" "$CARGO_TARGET_DIR/debug/dhp-adapter")

for ((i = 1; i <= RUNS; i++)); do
    echo "mutation_reach: suite run $i of $RUNS" >&2
    # %p: one file per process (the adapter processes too); %m: per binary;
    # %c: continuous mode (counters written as they change)
    LLVM_PROFILE_FILE="$prof/%p-%m%c.profraw" "$suite" --exact protocol_suite::ours_passes_the_whole_suite --nocapture >&2
done
"$tools/llvm-profdata" merge -sparse "$prof"/*.profraw -o "$prof/suite.profdata"
objects=()
for b in "${bins[@]:1}"; do objects+=(-object "$b"); done
"$tools/llvm-cov" export -format=lcov -instr-profile="$prof/suite.profdata" "${bins[0]}" "${objects[@]}" \
    >"$prof/suite.lcov"
python3 scripts/mutation_summary.py --reach "$OUT" "$prof/suite.lcov"
