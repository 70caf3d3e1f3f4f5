#!/usr/bin/env bash
# The exhaustive model check of dhp-model (issue 43, item 2): states
# explored and time at the small (CI) and large (nightly) bounds, with the
# machine's load. Writes benches/MODEL_CHECK.md, which benches/compare.sh
# appends to RESULTS.md as it is (not re-measured by every compare run).
#
#   benches/model_check.sh             measure, write benches/MODEL_CHECK.md
#   benches/model_check.sh --no-write  measure, print only
set -euo pipefail
cd "$(dirname "$0")/.."
WRITE=1
[ "${1:-}" = "--no-write" ] && WRITE=0
cargo build -q --release -p dhp-model --bin dhp-model-check
BIN=target/release/dhp-model-check
rows=""
for run in "small strict" "small check-then-write" "large strict"; do
    # shellcheck disable=SC2086  # bound, variant
    set -- $run
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    rc=0
    out=$("$BIN" --bound "$1" --variant "$2" 2>&1) || rc=$?
    line=$(grep -m1 'states generated' <<<"$out")
    failed=$(grep '^FAILED' <<<"$out" | sed 's/^FAILED: //' | paste -sd ';' | sed 's/;/; /g' || true)
    incomplete=$(grep -c '^INCOMPLETE' <<<"$out" || true)
    verdict=${failed:-all held}
    [ "$incomplete" -gt 0 ] && verdict="INCOMPLETE (state cap); $verdict"
    rows+="| $1 | $2 | $line | $verdict | $rc | $load |"$'\n'
done
md="## Model check (\`dhp-model-check\`, issue 43)

Measured $(date -u +%Y-%m-%dT%H:%MZ) at commit $(git rev-parse --short HEAD) by \`benches/model_check.sh\`: release build, depth-first, one thread; $(nproc) CPUs shared with other work (load average before each run). Bounds: 2 workers, 2 supervisors, 1 handoff; small = 1 checkpoint, clock ≤ 4 ticks, 1 fault; large = 2 checkpoints, clock ≤ 5, 2 faults (dhp-model/README.md). The check-then-write variant (PROTOCOL §13.2) must fail fencing. The CI test (\`cargo nextest run -p dhp-model\`, debug build, breadth-first) runs the small bound of both variants.

| bound | variant | states | properties failed | exit | load before |
|---|---|---|---|---:|---|
$rows"
if [ "$WRITE" = 1 ]; then
    printf '%s' "$md" > benches/MODEL_CHECK.md
    echo "model_check.sh: wrote benches/MODEL_CHECK.md" >&2
fi
printf '%s' "$md"
