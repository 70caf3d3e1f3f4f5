#!/usr/bin/env bash
# Side-by-side benchmark of dhp-core against the reference, dhp-protocol
# 1.3.0, in one invocation. Prints a Markdown table of rates, ratios and
# targets, with the machine's raw fsync rate; a full run also writes it to
# benches/RESULTS.md.
#
#   benches/compare.sh            full run (several minutes), updates RESULTS.md
#   benches/compare.sh --quick    smoke run with tiny sizes: checks that every code path
#                                 works, judges no target, writes no RESULTS.md
#   benches/compare.sh --no-write full run, table on stdout only
#   benches/compare.sh --report-only   re-render the last run's results (same
#                                 numbers, current report code) into RESULTS.md
#
# Both sides run on the same machine, on the same file system (scratch under
# target/bench-compare), on the same fixtures: the ingest log and the scan
# store are made once by `dhp-bench fixtures` and read by both. Progress goes
# to stderr. Run it when the machine is quiet: `uptime` load is recorded in
# the table.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
cd "$REPO"

QUICK=""
WRITE=1
REPORT_ONLY=0
for arg in "$@"; do
    case "$arg" in
        --quick) QUICK="--quick"; WRITE=0 ;;
        --no-write) WRITE=0 ;;
        --report-only) REPORT_ONLY=1 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "compare.sh: unknown argument $arg" >&2; exit 2 ;;
    esac
done

PY="$(bash scripts/setup.sh | tail -n 1)"
if [ -n "$QUICK" ]; then
    echo "compare.sh: SMOKE RUN (--quick): tiny sizes, no target judged, RESULTS.md untouched" >&2
fi
echo "compare.sh: building dhp-bench and dhp (release)" >&2
# One cargo invocation for both binaries: one feature resolution, no rebuild.
cargo build --release -p dhp-benches -p dhp --bin dhp-bench --bin dhp >&2
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
BIN="$TARGET_DIR/release/dhp-bench"
DHP="$TARGET_DIR/release/dhp"
DIR="$TARGET_DIR/bench-compare"

render() {
    local min=()
    [ -f "$DIR/rss-ours-min.json" ] && min=(--rss-ours-min "$DIR/rss-ours-min.json")
    "$BIN" report --ours "$DIR/ours.json" --ref "$DIR/ref.json" --rss-ours "$DIR/rss-ours.json" \
        --rss-ref "$DIR/rss-ref.json" --machine "$DIR/machine.json" "${min[@]}" --command "$1" > "$DIR/table.md"
    if [ -f "$DIR/text-order.md" ]; then cat "$DIR/text-order.md" >> "$DIR/table.md"; fi
    if [ -f "$DIR/pg.md" ]; then cat "$DIR/pg.md" >> "$DIR/table.md"; fi
    if [ -f "$DIR/tcp.md" ]; then cat "$DIR/tcp.md" >> "$DIR/table.md"; fi
    if [ -f "$DIR/scale.md" ]; then cat "$DIR/scale.md" >> "$DIR/table.md"; fi
    if [ -f "$DIR/conform.md" ]; then cat "$DIR/conform.md" >> "$DIR/table.md"; fi
    # Measured separately (benches/cold_build.sh: minutes of compiling),
    # dated inside; appended as it is.
    if [ -z "$QUICK" ] && [ -f "$REPO/benches/COLD_BUILD.md" ]; then cat "$REPO/benches/COLD_BUILD.md" >> "$DIR/table.md"; fi
    # Likewise benches/model_check.sh (the large bound runs for minutes).
    if [ -z "$QUICK" ] && [ -f "$REPO/benches/MODEL_CHECK.md" ]; then cat "$REPO/benches/MODEL_CHECK.md" >> "$DIR/table.md"; fi
    # And the profiles and before/after pairs measured by hand (dated inside).
    if [ -z "$QUICK" ] && [ -f "$REPO/benches/PROFILES.md" ]; then cat "$REPO/benches/PROFILES.md" >> "$DIR/table.md"; fi
}

if [ "$REPORT_ONLY" = 1 ]; then
    if [ ! -f "$DIR/header.md" ] || [ ! -f "$DIR/ours.json" ]; then
        echo "compare.sh: no full run in $DIR to re-render" >&2
        exit 1
    fi
    render "benches/compare.sh"
    cat "$DIR/header.md" "$DIR/table.md" > "$REPO/benches/RESULTS.md"
    cat "$DIR/table.md"
    echo "compare.sh: re-rendered benches/RESULTS.md from $DIR" >&2
    exit 0
fi

# The size-optimized deployment build of the worker, for the RSS row (fat
# LTO: minutes of compiling, so not in a smoke run).
if [ -z "$QUICK" ]; then
    echo "compare.sh: building dhp --profile min-size (fat LTO, slow)" >&2
    cargo build --profile min-size -p dhp --bin dhp >&2
fi
rm -rf "$DIR"
mkdir -p "$DIR"
trap 'rm -rf "$DIR/work" "$DIR/scan-rs" "$DIR/scan-py"' EXIT

"$BIN" machine --dir "$DIR" --out "$DIR/machine.json"
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "compare.sh: load average at start: $LOAD_START" >&2
"$BIN" fixtures --dir "$DIR" $QUICK
# Between the phases: flush what the previous one left (its scratch stores
# are deleted at its end) so that it does not land under the next one's fsyncs.
settle() { sync; sleep "${1:-2}"; }
settle 1
"$PY" "$REPO/benches/ref_bench.py" run --dir "$DIR" $QUICK --out "$DIR/ref.json"
settle
"$BIN" run --dir "$DIR" $QUICK --out "$DIR/ours.json"
settle
"$BIN" rss --dhp "$DHP" --dir "$DIR/work" --out "$DIR/rss-ours.json"
# The worker's functions are linked together from dhp/worker-text-order.txt
# (dhp/build.rs): its exact names carry one build's hashes, so say how many
# this build still has (stale ones fall back to the hash-free patterns).
"$PY" - "$DHP" "$REPO/dhp/worker-text-order.txt" > "$DIR/text-order.md" <<'PY'
import subprocess, sys
syms = set(l.split()[-1] for l in subprocess.run(["nm", "--defined-only", sys.argv[1]], capture_output=True, text=True, check=True).stdout.splitlines() if l.split())
lines = [l.strip()[6:] for l in open(sys.argv[2]) if l.strip().startswith(".text.")]
exact = [n for n in lines if not n.endswith("*")]
have = sum(n in syms for n in exact)
sec = [l.split() for l in subprocess.run(["readelf", "-S", "-W", sys.argv[1]], capture_output=True, text=True, check=True).stdout.splitlines() if ".text.dhp_worker" in l]
size = int(sec[0][sec[0].index(".text.dhp_worker") + 4], 16) if sec else 0
print(f"\nWorker text order (dhp/worker-text-order.txt): {have} of {len(exact)} exact names are functions of this build; `.text.dhp_worker` holds {size:,} bytes. Rerun scripts/worker-text-order.sh when the first share falls (a dependency or compiler update changes the hashes).\n")
PY
if [ -z "$QUICK" ]; then
    "$BIN" rss --dhp "$TARGET_DIR/min-size/dhp" --dir "$DIR/work" --out "$DIR/rss-ours-min.json"
fi
"$PY" "$REPO/benches/ref_bench.py" rss --dir "$DIR" --out "$DIR/rss-ref.json"
settle
# The PostgreSQL rows: a throwaway cluster (fsync=on, synchronous_commit=on;
# DHP_PG_COMMIT_DELAY / DHP_PG_COMMIT_SIBLINGS set its group-commit knobs)
# unless DHP_BENCH_PG_URL names a server; stopped when this script exits.
# The section reports the server's own settings and the load average.
PG_URL="${DHP_BENCH_PG_URL:-}"
if [ -z "$PG_URL" ]; then
    pg_out="$(bash scripts/pg.sh start --watch $$ | tail -1)"
    PG_URL="${pg_out#* }"
fi
mkdir -p "$DIR/pg"
"$BIN" pg --url "$PG_URL" --dhp "$DHP" --dir "$DIR/pg" $QUICK --out "$DIR/pg.json" --md "$DIR/pg.md"
settle
scale_section() {
    # Issue 21 (docs/scale.md): scan and liveness poll at 1k/10k/100k running
    # handoffs beside the reference's scan, a 1M-handoff store, 1/8/32
    # writer processes, kill -9 -> orphaned at 100k running.
    local sizes=()
    if [ -n "$QUICK" ]; then
        # shellcheck disable=SC2054  # the commas are inside flag values
        sizes=(--sizes 200,1000 --big 5000 --big-running 200 --procs 1,4 --seconds 1 --kills 3 --kill-running 1000 --reps 3)
    fi
    mkdir -p "$DIR/scale"
    "$BIN" scale --dir "$DIR/scale" --dhp "$DHP" --py "$PY" "${sizes[@]}" --out "$DIR/scale.json" --md "$DIR/scale.md" > /dev/null
}
scale_section

# --- TCP transport: shipping rates (sync/async x fsync x TLS), the server's
# RSS under 1,000 hostile connections, and the bounded-state soak (server
# RSS every 100,000 of 1,000,000 handoffs; DHP_BENCH_SOAK_HANDOFFS to change).
settle
if [ -n "$QUICK" ]; then
    "$BIN" tcp-soak --dhp "$DHP" --dir "$DIR/tcp-soak" --handoffs 2000 --every 500 --out "$DIR/tcp-soak.json"
else
    "$BIN" tcp-soak --dhp "$DHP" --dir "$DIR/tcp-soak" --handoffs "${DHP_BENCH_SOAK_HANDOFFS:-1000000}" \
        --out "$DIR/tcp-soak.json"
fi
settle
"$BIN" tcp --dhp "$DHP" --dir "$DIR/tcp" $QUICK --out "$DIR/tcp.json" --md "$DIR/tcp.md" --soak "$DIR/tcp-soak.json"

# --- The conformance suite's wall time (issue 32): the default suite
# against ours and against the reference, debug build (what README quotes).
settle
conform_section() {
    echo "compare.sh: conformance suite wall time (debug dhp-conform and dhp-adapter)" >&2
    cargo build -p dhp-conform -p dhp-adapter --bin dhp-conform --bin dhp-adapter >&2
    local conform="$TARGET_DIR/debug/dhp-conform" filter=()
    # A smoke run times one assertion only: the code path, not the figure.
    [ -n "$QUICK" ] && filter=(--exact no-crossed-inputs)
    {
        echo
        echo "## Conformance suite wall time (\`dhp-conform\`, issue 32)"
        echo
        echo "Debug build, default suite (\`--level all\`, one assertion at a time), same run as the tables above;" \
             "exit status 1 means some assertion failed (the reference's known weaknesses: dhp-conform/expectations/reference.json)."
        echo
        echo "| implementation | wall time | exit status | summary | load average after |"
        echo "|---|---:|---:|---|---|"
    } > "$DIR/conform.md"
    for impl in ours reference; do
        local t0 t1 rc=0
        t0=$(date +%s.%N)
        DHP_PYTHON="$PY" "$conform" --impl "$impl" "${filter[@]}" > "$DIR/conform-$impl.txt" 2>&1 || rc=$?
        t1=$(date +%s.%N)
        local summary
        summary="$(grep -E '[0-9]+ passed' "$DIR/conform-$impl.txt" | tail -1 | tr -s ' ' | tr '|' '/')"
        printf '| %s | %.1f s | %s | %s | %s |\n' "$impl" "$(echo "$t1 - $t0" | bc)" "$rc" "${summary:-?}" \
            "$(cut -d' ' -f1-3 /proc/loadavg)" >> "$DIR/conform.md"
    done
}
conform_section

CMD="benches/compare.sh${QUICK:+ $QUICK}"
render "$CMD"
cat "$DIR/table.md"
if [ -n "$QUICK" ]; then
    echo "compare.sh: smoke run done; for the numbers and the target verdicts run benches/compare.sh" >&2
fi

if [ "$WRITE" = 1 ]; then
    DIRTY="$(git status --porcelain --untracked-files=no | wc -l | tr -d ' ')"
    {
        echo "# dhp-rs vs dhp-protocol 1.3.0 — benchmark results"
        echo
        echo "Measured $(date -u +%Y-%m-%dT%H:%MZ) on the work tree at commit $(git rev-parse --short HEAD)" \
             "($DIRTY tracked files modified) by \`benches/compare.sh\`:"
        echo "each number below comes from that one run (raw JSON: target/bench-compare/*.json)."
        echo "Rates are operations per second, higher is better; durable operations commit to SQLite"
        echo "(WAL, synchronous=FULL) on both sides. See benches/README.md for what each row measures."
        echo "Targets are ratios to a limit measured in the same run on the same server or disk (issue 37):"
        echo "pgbench on the same PostgreSQL server, the journal disk's fdatasync loop, the SQLite single"
        echo "writer; each is printed MET or MISSED."
        echo "Load average (1/5/15 min) at the start of the run: $LOAD_START; at its end: $(cut -d' ' -f1-3 /proc/loadavg)."
        echo "TCP soak: ${DHP_BENCH_SOAK_HANDOFFS:-1000000} handoffs$([ -n "${DHP_BENCH_SOAK_HANDOFFS:-}" ] && echo " (lowered from 1,000,000 with DHP_BENCH_SOAK_HANDOFFS)")."
        echo
    } > "$DIR/header.md"
    cat "$DIR/header.md" "$DIR/table.md" > "$REPO/benches/RESULTS.md"
    echo "compare.sh: wrote benches/RESULTS.md" >&2
fi
