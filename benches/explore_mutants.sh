#!/usr/bin/env bash
# --explore alone against every mutant of the dhp-rs adapter (issue 45):
# one run per mutant, seed 1, at most SEQUENCES sequences (default 20; a
# number, not a time, so the verdict does not depend on the machine's
# load), JOBS runs at once (default 3). Prints a TSV row per mutant:
# name, exit status (1 = caught), the family row that failed, how far it
# shrank, how often the minimal sequence reproduced, the wall time, what
# diverged. The fixed assertions' side of the comparison is dhp-conform's
# mutant test (tests/it/mutants.rs): each mutant fails exactly its
# assertions.
#
# Usage: benches/explore_mutants.sh [SEQUENCES] [MUTANT ...]
#        (after cargo build -p dhp-conform -p dhp-adapter; T=DIR for other binaries)
set -euo pipefail
cd "$(dirname "$0")/.."
export T="${T:-${CARGO_TARGET_DIR:-target}/debug}"
export SEQS="${1:-20}"
shift || true
MUTANTS=("$@")
if [ ${#MUTANTS[@]} -eq 0 ]; then
    mapfile -t MUTANTS < <("$T/dhp-mutant-adapter" --list-mutants | cut -f1)
fi
OUT="$(mktemp -d)"
export OUT
trap 'rm -rf "$OUT"' EXIT
one() {
    local m=$1 start=$SECONDS text rc
    set +e
    text=$("$T/dhp-conform" --impl "$T/dhp-mutant-adapter --mutant $m" --explore --seed 1 \
        --sequences "$SEQS" --time 900 --replay-dir "$OUT/$m" 2>&1)
    rc=$?
    set -e
    fam=$(grep -o "^explore-[a-z]*: divergence" <<<"$text" | head -1 | cut -d: -f1 || true)
    shrunk=$(grep -o "shrunk from [0-9]* to [0-9]* steps" <<<"$text" | head -1 || true)
    rep=$(grep -o "reproduced [0-9]*/[0-9]*" <<<"$text" | head -1 || true)
    what=$(grep -o "^after step [0-9]*: [^—]*" <<<"$text" | head -1 | sed 's/ *$//' || true)
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$m" "$rc" "$fam" "$shrunk" "$rep" "$((SECONDS - start))" "$what"
}
export -f one
printf "mutant\texit\tfamily\tshrunk\treproduced\tseconds\tdiverged\n"
printf "%s\n" "${MUTANTS[@]}" | xargs -P "${JOBS:-3}" -I{} bash -c 'one "$@"' _ {}
