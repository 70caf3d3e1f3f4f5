#!/usr/bin/env bash
# Cold build times (issue 37, item 4): `cargo build -p dhp-conform` and the
# quickstart (README's first command), each from an EMPTY target directory
# (CARGO_TARGET_DIR = a fresh temporary directory, deleted afterwards), with
# the machine's load average before and after. Writes benches/COLD_BUILD.md,
# which benches/compare.sh appends to RESULTS.md as it is (it is not
# re-measured by every compare run: a cold build takes minutes).
#
#   benches/cold_build.sh            measure both, write benches/COLD_BUILD.md
#   benches/cold_build.sh --no-write measure both, print only
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
cd "$REPO"
WRITE=1
for arg in "$@"; do
    case "$arg" in
        --no-write) WRITE=0 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "cold_build.sh: unknown argument $arg" >&2; exit 2 ;;
    esac
done

T="$(mktemp -d "${TMPDIR:-/tmp}/dhp-cold-build.XXXXXX")"
trap 'rm -rf "$T"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
ROWS=()
# measure LABEL DIR CMD... : wall time, crates compiled, cargo's own
# "Finished" time, load before and after.
measure() {
    local label="$1" dir="$2"
    shift 2
    local before t0 t1 rc=0
    before="$(load)"
    t0=$(date +%s.%N)
    CARGO_TARGET_DIR="$T/$dir" "$@" > "$T/$dir.log" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    local crates finished
    crates="$(grep -c '^ *Compiling ' "$T/$dir.log" || true)"
    finished="$(grep -Eo 'Finished .* in [0-9.]+(m [0-9]+)?s' "$T/$dir.log" | tail -1 | grep -Eo '[0-9.]+(m [0-9]+)?s$' || true)"
    ROWS+=("| $label | $(printf '%.0f' "$(echo "$t1 - $t0" | bc)") s | ${finished:-?} | $crates | $rc | $before | $(load) |")
    echo "cold_build.sh: $label: exit $rc, $(echo "$t1 - $t0" | bc) s, $crates crates" >&2
    rm -rf "${T:?}/$dir"
}
echo "cold_build.sh: cargo build -p dhp-conform from an empty target dir" >&2
# shellcheck disable=SC2016  # backquotes are Markdown here
measure '`cargo build --locked -p dhp-conform`' conform cargo build --locked -p dhp-conform
echo "cold_build.sh: scripts/quickstart.sh from an empty target dir" >&2
# shellcheck disable=SC2016
measure '`scripts/quickstart.sh` (build of `dhp` + the kill/recover walk-through)' quickstart bash scripts/quickstart.sh

{
    echo
    echo "## Cold builds and suite times (issue 37, item 4)"
    echo
    echo "Measured $(date -u +%Y-%m-%dT%H:%MZ) at commit $(git rev-parse --short HEAD) by \`benches/cold_build.sh\`" \
         "(not part of each compare run: minutes of compiling). Each from an empty target directory" \
         "(\`CARGO_TARGET_DIR\` a fresh temporary directory, deleted afterwards); $(nproc) CPUs, shared with other" \
         "work: the load average is beside each row."
    echo
    echo "| command | wall time | cargo's \"Finished\" time | crates compiled | exit status | load before | load after |"
    echo "|---|---:|---:|---:|---:|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "\`scripts/test.sh\` per phase, quoted from the CI run of 2026-12-02 (fresh clone, empty target directory," \
         "this machine class), not measured by this script:"
    echo
    echo "| phase | time |"
    echo "|---|---:|"
    echo "| fmt | 2 s |"
    echo "| venv | 26 s |"
    echo "| postgres | 1 s |"
    echo "| build | 3 min 16 s |"
    echo "| clippy | 1 min 25 s |"
    echo "| tests | 10 min 32 s |"
    echo "| doctests | 22 s |"
    echo "| total | 16 min 08 s (load average 2.25 2.19 1.85) |"
} > "$T/cold.md"
cat "$T/cold.md"
if [ "$WRITE" = 1 ]; then
    cp "$T/cold.md" "$REPO/benches/COLD_BUILD.md"
    echo "cold_build.sh: wrote benches/COLD_BUILD.md" >&2
fi
