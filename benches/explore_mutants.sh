#!/usr/bin/env bash
# --explore alone against every mutant of the dhp-rs adapter (issue 45):
# one run per mutant, seed 1, --time SECS (default 25) of exploring; prints
# a TSV row per mutant: name, exit status (1 = caught), the family row that
# failed, how far it shrank, how often the minimal sequence reproduced, the
# sequences run and the wall time. The fixed assertions' side of the
# comparison is dhp-conform's mutant test (tests/it/mutants.rs): each of
# those mutants fails exactly its assertion.
#
# Usage: benches/explore_mutants.sh [SECS] [MUTANT ...]   (after cargo build -p dhp-conform -p dhp-adapter)
set -euo pipefail
cd "$(dirname "$0")/.."
T="${CARGO_TARGET_DIR:-target}/debug"
SECS="${1:-25}"
shift || true
MUTANTS=("$@")
if [ ${#MUTANTS[@]} -eq 0 ]; then
    mapfile -t MUTANTS < <("$T/dhp-mutant-adapter" --list-mutants | cut -f1)
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
printf "mutant\texit\tfamily\tshrunk\treproduced\tsequences\tseconds\n"
for m in "${MUTANTS[@]}"; do
    start=$SECONDS
    set +e
    text=$("$T/dhp-conform" --impl "$T/dhp-mutant-adapter --mutant $m" --explore --seed 1 --time "$SECS" \
        --replay-dir "$out/$m" 2>&1)
    rc=$?
    set -e
    fam=$(grep -o "^explore-[a-z]*: divergence" <<<"$text" | head -1 | cut -d: -f1 || true)
    shrunk=$(grep -o "shrunk from [0-9]* to [0-9]* steps" <<<"$text" | head -1 || true)
    rep=$(grep -o "reproduced [0-9]*/[0-9]*" <<<"$text" | head -1 || true)
    seqs=$(grep -o "seed 1, [0-9]* sequences" <<<"$text" | head -1 | cut -d' ' -f3 || true)
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$m" "$rc" "$fam" "$shrunk" "$rep" "$seqs" "$((SECONDS - start))"
done
