#!/usr/bin/env bash
# Mutation score of the conformance suite: cargo-mutants mutates dhp-core's
# protocol modules (runner, supervisor, store backends, envelope, transport
# log) and runs ONLY the conformance suite against each mutant
# (dhp-conform/tests/protocol_suite.rs: ours at every level, plus the cross
# level with the Python reference). Results go to dhp-conform/mutation/.
#
#   scripts/mutation_score.sh              # every mutant (~720; hours on 2 cores)
#   scripts/mutation_score.sh 0/24         # one round-robin shard of 24 (a sample)
#   scripts/mutation_score.sh --summarise  # only rebuild summary.md from the last run
#
# Needs: cargo install cargo-mutants (27.x), the reference venv
# (bash scripts/setup.sh, or DHP_PYTHON). Honours CARGO_TARGET_DIR (a private
# one is best: every mutant is an incremental build of dhp-core and the
# conformance binaries).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=dhp-conform/mutation
FILES=(dhp-core/src/runner.rs dhp-core/src/supervisor.rs dhp-core/src/store/mod.rs dhp-core/src/store/sqlite.rs
       dhp-core/src/store/mem.rs dhp-core/src/envelope.rs dhp-core/src/transport/log.rs)

if [[ "${1:-}" != "--summarise" ]]; then
    command -v cargo-mutants >/dev/null || { echo "cargo-mutants is not installed: cargo install cargo-mutants" >&2; exit 2; }
    export DHP_PYTHON="${DHP_PYTHON:-$PWD/.venv/bin/python}"
    [[ -x "$DHP_PYTHON" ]] || { echo "no reference interpreter at $DHP_PYTHON (bash scripts/setup.sh)" >&2; exit 2; }
    # no `-p dhp-core`: with it, cargo-mutants 27.1 tests dhp-core's own tests
    # instead of --test-package; the -f files select dhp-core alone anyway
    args=(--test-package dhp-conform --cargo-test-arg=--test --cargo-test-arg=protocol_suite
          --timeout "${MUTANTS_TIMEOUT:-240}" --build-timeout "${MUTANTS_BUILD_TIMEOUT:-1200}" --no-shuffle -o "$OUT"
          # cargo-mutants 27.1's baseline runs the mutated package's tests
          # (dhp-core's), not --test-package: the unmutated suite is checked
          # here instead
          --baseline skip)
    for f in "${FILES[@]}"; do args+=(-f "$f"); done
    [[ -n "${1:-}" ]] && args+=(--shard "$1" --sharding round-robin)
    mkdir -p "$OUT"
    cargo test -p dhp-conform --test protocol_suite
    list=(-p dhp-core)
    for f in "${FILES[@]}"; do list+=(-f "$f"); done
    cargo mutants --list "${list[@]}" > "$OUT/all-mutants.txt"
    # cargo-mutants exits 2 when some mutants survive, 3 on timeouts: both are results
    rc=0
    cargo mutants "${args[@]}" || rc=$?
    [[ $rc == 0 || $rc == 2 || $rc == 3 ]] || exit "$rc"
fi
python3 scripts/mutation_summary.py "$OUT"
