#!/usr/bin/env bash
# Mutation score of the conformance suite: cargo-mutants mutates dhp-core's
# protocol modules (runner, supervisor, store backends, envelope, transport
# log) and runs ONLY the conformance suite against each mutant
# (dhp-conform/tests/it/protocol_suite.rs: ours at every level, plus the cross
# level with the Python reference). Results go to dhp-conform/mutation/.
#
#   scripts/mutation_score.sh              # every mutant (~750; hours on 2 cores)
#   scripts/mutation_score.sh 3/16         # round-robin shard 3 of 16 (an unbiased
#                                          # sample) into mutation/shards/3-of-16/,
#                                          # then every shard there is merged
#   scripts/mutation_score.sh --summarise  # only merge the shards (if any) and
#                                          # rebuild summary.md from the last run
#   scripts/mutation_score.sh --sample N [SEED]
#                                          # N mutants drawn at random (SEED, printed;
#                                          # default: the time) from those the suite
#                                          # reaches (reach.tsv, mutation_reach.sh) with
#                                          # no outcome yet, into mutation/shards/
#                                          # sample-SEED/, then every shard is merged:
#                                          # repeated runs grow one random sample
#   scripts/mutation_score.sh --list       # only write mutation/all-mutants.txt
#   scripts/mutation_score.sh --retest FILE
#                                          # re-test the mutants named in FILE (one
#                                          # a line: e.g. the survivors, after new
#                                          # assertions) into mutation/retest/; earlier
#                                          # re-tests there are kept (the newest
#                                          # outcome of a mutant wins)
#
# One run per target directory at a time: cargo names a workspace crate's
# artifacts the same from any copy of the tree, so two runs (or
# CARGO_MUTANTS_JOBS=2) sharing CARGO_TARGET_DIR overwrite each other's
# mutated binaries and wait on each other's build lock inside the timed
# test phase. For parallel jobs, give cargo-mutants no CARGO_TARGET_DIR.
#
# Needs: cargo install cargo-mutants (27.x), the reference venv
# (bash scripts/setup.sh, or DHP_PYTHON). Honours CARGO_TARGET_DIR (a private
# one is best: every mutant is an incremental build of dhp-core and the
# conformance binaries).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=dhp-conform/mutation
# globs: runner/ and supervisor/ are directories of modules
FILES=(dhp-core/src/runner/*.rs dhp-core/src/supervisor/*.rs dhp-core/src/store/mod.rs dhp-core/src/store/sqlite.rs
       dhp-core/src/store/sqlite/{ddl,open,sql,tx,writer_lock}.rs
       dhp-core/src/store/mem.rs dhp-core/src/envelope.rs dhp-core/src/transport/log.rs)

summarise() {
    shopt -s nullglob
    local shards=("$OUT"/shards/*/)
    if ((${#shards[@]})); then
        python3 scripts/mutation_summary.py --merge "$OUT" "${shards[@]}"
    else
        python3 scripts/mutation_summary.py "$OUT"
    fi
}

if [[ "${1:-}" == "--summarise" ]]; then
    summarise
    exit 0
fi

command -v cargo-mutants >/dev/null || { echo "cargo-mutants is not installed: cargo install cargo-mutants" >&2; exit 2; }
export DHP_PYTHON="${DHP_PYTHON:-$PWD/.venv/bin/python}"
[[ -x "$DHP_PYTHON" ]] || { echo "no reference interpreter at $DHP_PYTHON (bash scripts/setup.sh)" >&2; exit 2; }
# --cargo-arg (every cargo call, the build too): build only dhp-conform's
# one integration-test binary (tests/it), and --cargo-test-arg: run only the
# suite in it (tests/it/protocol_suite.rs). dhp-conform links no dhp-core: the
# suite builds the mutated dhp-core into dhp-rs's adapter itself
# (dhp_testkit::workspace_bin runs `cargo build -p dhp-adapter`).
# No `-p dhp-core`: with it, cargo-mutants 27.1 tests dhp-core's own tests
# instead of --test-package; the -f files select dhp-core alone anyway.
args=(--test-package dhp-conform --cargo-arg=--test=it --cargo-test-arg=protocol_suite
      --timeout "${MUTANTS_TIMEOUT:-240}" --build-timeout "${MUTANTS_BUILD_TIMEOUT:-1200}" --no-shuffle
      # cargo-mutants 27.1's baseline runs the mutated package's tests
      # (dhp-core's), not --test-package: the unmutated suite is checked
      # here instead
      --baseline skip)
for f in "${FILES[@]}"; do args+=(-f "$f"); done
# MUTANTS_IN_PLACE=1 (CI): mutate the checkout itself instead of a copy, so
# the first mutant does not rebuild every workspace crate at a new path.
# Not while editing the tree: a mutant's source is live until it is tested.
[[ "${MUTANTS_IN_PLACE:-}" == 1 ]] && args+=(--in-place)
list_mutants() {
    local list=(-p dhp-core)
    for f in "${FILES[@]}"; do list+=(-f "$f"); done
    cargo mutants --list "${list[@]}" > "$OUT/all-mutants.txt"
}
if [[ "${1:-}" == "--list" ]]; then
    list_mutants
    wc -l < "$OUT/all-mutants.txt"
    exit 0
fi
dest="$OUT"
drawn=""
case "${1:-}" in
    "") rm -rf "$OUT/shards" ;;
    --retest)
        [[ -r "${2:-}" ]] || { echo "--retest needs a file of mutant names" >&2; exit 2; }
        # cargo-mutants' --re takes regexes: each name, escaped, anchored
        while IFS= read -r name; do
            [[ -n "$name" ]] && args+=(--re "^$(printf '%s' "$name" | sed 's/[][\\.^$*+?(){}|]/\\&/g')\$")
        done <"$2"
        dest="$OUT/retest" ;;
    --sample)
        [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "--sample needs a count N" >&2; exit 2; }
        seed="${3:-$(date +%s)}"
        [[ "$seed" =~ ^[0-9]+$ ]] || { echo "--sample: SEED must be a number" >&2; exit 2; }
        [[ -s "$OUT/reach.tsv" ]] || { echo "no $OUT/reach.tsv: run scripts/mutation_reach.sh first" >&2; exit 2; }
        echo "mutation_score: sample of $2, seed $seed" >&2
        list_mutants
        dest="$OUT/shards/sample-$seed"
        [[ ! -e "$dest" ]] || { echo "$dest exists: pick another seed" >&2; exit 2; }
        drawn=$(mktemp)
        python3 scripts/mutation_summary.py --draw "$OUT" "$2" "$seed" > "$drawn"
        [[ -s "$drawn" ]] || { echo "nothing left to draw" >&2; exit 0; }
        while IFS= read -r name; do
            args+=(--re "^$(printf '%s' "$name" | sed 's/[][\\.^$*+?(){}|]/\\&/g')\$")
        done <"$drawn" ;;
    */*)
        [[ "$1" =~ ^([0-9]+)/([0-9]+)$ ]] || { echo "a shard is I/K, e.g. 0/16" >&2; exit 2; }
        args+=(--shard "$1" --sharding round-robin)
        dest="$OUT/shards/${BASH_REMATCH[1]}-of-${BASH_REMATCH[2]}" ;;
    *) echo "usage: $0 [I/K | --summarise | --retest FILE]" >&2; exit 2 ;;
esac
mkdir -p "$dest"
[[ -z "$drawn" ]] || mv "$drawn" "$dest/drawn.txt"
cargo test -p dhp-conform --test it protocol_suite
[[ "${1:-}" == --sample ]] || list_mutants
# a shard carries the list too (the nightly merge job has only the shards)
[[ "$dest" == "$OUT" ]] || cp "$OUT/all-mutants.txt" "$dest/"
# cargo-mutants exits 2 when some mutants survive, 3 on timeouts: both are results
rc=0
# re-tests accumulate: the outcome lists of earlier ones are kept aside
# and merged back (a mutant re-tested again keeps its newest outcome)
earlier=""
if [[ "${1:-}" == --retest && -d "$dest/mutants.out" ]]; then
    earlier=$(mktemp -d)
    cp "$dest"/mutants.out/*.txt "$earlier"/ 2>/dev/null || true
fi
cargo mutants "${args[@]}" -o "$dest" || rc=$?
[[ $rc == 0 || $rc == 2 || $rc == 3 ]] || exit "$rc"
if [[ "${1:-}" == --retest ]]; then
    [[ -z "$earlier" ]] || python3 scripts/mutation_summary.py --keep-earlier "$dest" "$earlier"
    python3 scripts/mutation_summary.py --retest "$dest"
else
    summarise
fi
