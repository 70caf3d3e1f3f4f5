#!/usr/bin/env bash
# Repeat chosen tests N times under load, to find (and prove gone) the tests
# that fail only on a busy machine.
#
#   scripts/stress.sh [-n N] [--hog H] -- NEXTEST-ARGS...
#   scripts/stress.sh -n 5 --hog 2 -- -p dhp -E 'test(trace_attempts)'
#
# Builds once (`cargo nextest run --no-run`), then runs `cargo nextest run
# NEXTEST-ARGS` N times (default 5) with H busy-loop processes (default: the
# number of cores) beside it; the hogs are started here and killed by their
# pids when the script ends. Prints pass/fail and the seconds of each
# iteration, the failing tests' names, and a summary; exits 1 if any
# iteration failed, 2 on a usage error.
set -euo pipefail

usage() {
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

n=5
hog=$(nproc)
while [ $# -gt 0 ]; do
    case "$1" in
        -n) [ $# -ge 2 ] || usage; n="$2"; shift 2 ;;
        --hog) [ $# -ge 2 ] || usage; hog="$2"; shift 2 ;;
        --) shift; break ;;
        -h|--help) usage ;;
        *) echo "stress.sh: unknown argument $1 (nextest's arguments go after --)" >&2; usage ;;
    esac
done
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "stress.sh: -n must be a positive integer, not '$n'" >&2; exit 2; }
[[ "$hog" =~ ^[0-9]+$ ]] || { echo "stress.sh: --hog must be a number of processes, not '$hog'" >&2; exit 2; }
[ $# -gt 0 ] || { echo "stress.sh: no tests chosen (e.g. -- -p dhp -E 'test(trace_attempts)')" >&2; exit 2; }
cargo nextest --version >/dev/null 2>&1 || { echo "stress.sh: cargo nextest is not installed (cargo install cargo-nextest)" >&2; exit 2; }

cd "$(dirname "$0")/.."
echo "stress.sh: building: cargo nextest run --no-run $*"
cargo nextest run --no-run "$@"

hogs=()
stop_hogs() {
    for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${hogs[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop_hogs EXIT
for _ in $(seq 1 "$hog"); do
    # A busy loop in its own process: one core's worth of load.
    bash -c 'while :; do :; done' &
    hogs+=("$!")
done
echo "stress.sh: $n iteration(s), $hog hog process(es), load $(cut -d' ' -f1-3 /proc/loadavg)"

log=$(mktemp -d)
failed=0
for i in $(seq 1 "$n"); do
    start=$(date +%s)
    if cargo nextest run --no-fail-fast "$@" >"$log/$i.txt" 2>&1; then
        verdict=pass
    else
        verdict=FAIL
        failed=$((failed + 1))
    fi
    secs=$(( $(date +%s) - start ))
    summary=$(grep -E '^ +Summary ' "$log/$i.txt" | tail -1 | sed 's/^ *//') || true
    echo "iteration $i/$n: $verdict (${secs} s, load $(cut -d' ' -f1 /proc/loadavg)) ${summary}"
    if [ "$verdict" = FAIL ]; then
        grep -E '^ +(FAIL|TIMEOUT|SIGSEGV|SIGABRT) ' "$log/$i.txt" | sort -u | sed 's/^ */    /' || tail -20 "$log/$i.txt"
        echo "    output: $log/$i.txt"
    fi
done
echo "stress.sh: $((n - failed))/$n iteration(s) passed under $hog hog(s)"
[ "$failed" -eq 0 ] && rm -rf "$log"
[ "$failed" -eq 0 ]
