#!/usr/bin/env bash
# The first run of dhp-rs: build `dhp`, dispatch a prime-census handoff,
# start a worker, kill -9 it mid-run, let the supervisor orphan the handoff,
# recover it with a standby worker, and show the result. Every step says
# what it does; cargo shows its own progress while building. The store lives
# in a temporary directory that is removed on exit (set DHP_QUICKSTART_KEEP=1
# to keep it).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
die() { echo "quickstart: $*" >&2; exit 1; }

# The dev profile, like `cargo test` and `cargo run`: one build of every
# dependency serves the quickstart, the tests and the harnesses.
step "Building dhp (cargo build -p dhp --bin dhp)"
echo "    A first build compiles about 150 crates: minutes on a 2-core machine."
echo "    Later runs take a second."
cargo build --locked -p dhp --bin dhp
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps --locked \
    | grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)"
DHP="$TARGET_DIR/debug/dhp"
[ -x "$DHP" ] || die "no dhp binary at $DHP after the build"

ROOT="$(mktemp -d "${TMPDIR:-/tmp}/dhp-quickstart.XXXXXX")"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${DHP_QUICKSTART_KEEP:-0}" = 1 ]; then
        echo "quickstart: store kept in $ROOT"
    else
        rm -rf "$ROOT"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Short leases so the lease fallback is quick too; the worker's liveness
# token makes the orphan near-instant anyway.
export DHP_LEASE_INTERVAL_S=${DHP_LEASE_INTERVAL_S:-0.5}
checkpoints() { "$DHP" status "$ROOT" "$HID" --json | sed -E 's/.*"checkpoints":([0-9]+).*/\1/'; }

step "Dispatching a prime-census handoff into a fresh store ($ROOT)"
HID=$("$DHP" dispatch "$ROOT" --census 5000000,5040000,100)
echo "    handoff $HID: count the primes in [5,000,000, 5,040,000) in 400 chunks of 100"

step "Starting a supervisor (it orphans the work of dead workers) and worker-A"
"$DHP" supervisor "$ROOT" sup1 3600 >/dev/null 2>&1 &
PIDS+=($!)
"$DHP" work "$ROOT" --runner worker-A claim "$HID" --pace 0.01 >/dev/null 2>&1 &
W=$!
PIDS+=("$W")

step "Letting worker-A checkpoint 150 of the 400 chunks"
DEADLINE=$((SECONDS + 60))
while [ "$(checkpoints)" -lt 150 ]; do
    kill -0 "$W" 2>/dev/null || die "worker-A exited before its 150th checkpoint"
    [ "$SECONDS" -lt "$DEADLINE" ] || die "worker-A did not reach 150 checkpoints in 60 s"
    sleep 0.05
done

step "kill -9 worker-A (pid $W)"
# (stderr off: bash would report the job as "Killed")
{ kill -9 "$W" && wait "$W"; } 2>/dev/null || true
T0=$(date +%s.%N)
echo "    worker-A died after $(checkpoints) checkpoints"

step "Waiting for the supervisor to orphan the handoff"
DEADLINE=$((SECONDS + 30))
until "$DHP" status "$ROOT" "$HID" --json | grep -q '"status":"orphaned"'; do
    [ "$SECONDS" -lt "$DEADLINE" ] || die "the supervisor did not orphan the handoff in 30 s"
    sleep 0.005
done
T1=$(date +%s.%N)
echo "    orphaned $(awk "BEGIN{print int(($T1-$T0)*1000)}") ms after the kill (lease alone: $(awk "BEGIN{print $DHP_LEASE_INTERVAL_S*${DHP_LEASE_MAX_MISSED:-3}}") s)"

step "worker-B recovers the handoff from the last checkpoint and finishes it"
"$DHP" work "$ROOT" --runner worker-B recover "$HID" --json \
  | sed -E 's/.*"resumed_from":([0-9]+).*"chunks_this_run":([0-9]+).*/    worker-B resumed at n=\1 and ran the remaining \2 chunks/'

step "The handoff's final status"
"$DHP" status "$ROOT" "$HID"
