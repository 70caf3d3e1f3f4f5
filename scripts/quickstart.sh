#!/usr/bin/env bash
# Sets up and runs the short example: dispatch a prime-census handoff,
# start a worker, kill -9 it mid-run, let the supervisor orphan the
# handoff, recover it with a standby, and show the result.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p dhp-core --bin dhp
DHP=target/release/dhp
ROOT=$(mktemp -d /tmp/dhp-quickstart.XXXXXX)
export DHP_LEASE_INTERVAL_S=${DHP_LEASE_INTERVAL_S:-0.5}
echo "store: $ROOT/dhp.sqlite3"
HID=$($DHP dispatch "$ROOT" --census 5000000,5040000,100)
echo "dispatched prime.census $HID (400 chunks)"
$DHP supervisor "$ROOT" sup1 3600 >/dev/null 2>&1 &
SUP=$!
trap 'kill $SUP 2>/dev/null || true' EXIT
$DHP work "$ROOT" --runner worker-A claim "$HID" --pace 0.01 >/dev/null 2>&1 &
W=$!
while [ "$($DHP status "$ROOT" "$HID" --json | sed -E 's/.*"checkpoints":([0-9]+).*/\1/')" -lt 150 ]; do sleep 0.05; done
kill -9 $W; wait $W 2>/dev/null || true
T0=$(date +%s.%N)
echo "*** kill -9 worker-A (pid $W) at $($DHP status "$ROOT" "$HID" --json | sed -E 's/.*"checkpoints":([0-9]+).*/\1/') checkpoints ***"
until $DHP status "$ROOT" "$HID" --json | grep -q '"status":"orphaned"'; do sleep 0.005; done
T1=$(date +%s.%N)
echo "supervisor orphaned the handoff $(awk "BEGIN{print int(($T1-$T0)*1000)}") ms after the kill"
$DHP work "$ROOT" --runner worker-B recover "$HID" --json \
  | sed -E 's/.*"resumed_from":([0-9]+).*"chunks_this_run":([0-9]+).*/worker-B resumed at n=\1 and ran the remaining \2 chunks/'
$DHP status "$ROOT" "$HID"
