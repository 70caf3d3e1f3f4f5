#!/usr/bin/env bash
# The acknowledged-checkpoint pause of one `dhp work` across a fault of
# scripts/pg-auto.sh's pg_auto_failover formation (needs root: namespaces).
#
#   benches/failover_pause.sh DHP_BIN FAULT [INTERVAL_S MAX_MISSED]
#     FAULT: switchover (planned) | kill-primary (the primary's host SIGKILLed;
#            started again once another node is primary)
#
# A supervisor and a census worker (--pace 0.02, its lease INTERVAL_S x
# MAX_MISSED, default 1 x 5) run on the formation's multi-host URL. When the
# worker exits, this script does what a harness does: it waits until the
# handoff is orphaned and starts `dhp work recover` (that is the pause of a
# worker that cannot ride through). Prints, from the workers' histories:
# the longest gap between two acknowledged checkpoints around the fault,
# the worker exits, orphans and fences; and the monitor's promotion time
# (fault start → a new node reported primary).
set -euo pipefail
BIN="${1:?usage: failover_pause.sh DHP_BIN switchover|kill-primary [INTERVAL_S MAX_MISSED]}"
FAULT="${2:?fault}"
export DHP_LEASE_INTERVAL_S="${3:-1}" DHP_LEASE_MAX_MISSED="${4:-5}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
AUTO="$HERE/scripts/pg-auto.sh"
OUT="$(mktemp -d /tmp/dhp-failover-pause.XXXXXX)"
line="$(bash "$AUTO" start --watch $$ 2>"$OUT/start.err" | tail -1)"
DIR="${line%% *}"
URL="${line#* }&schema=pause"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    bash "$AUTO" stop "$DIR" >/dev/null 2>&1 || true
}
trap cleanup EXIT
# the node the monitor reports primary, other than $1 (a dead primary stays reported)
primary() { bash "$AUTO" state "$DIR" | awk -v not="${1:-}" '$2 == "primary" && $1 != not {print $1; exit}'; }
status() { "$BIN" status "$URL" "$1" --json 2>/dev/null | python3 -c 'import sys,json; print(json.load(sys.stdin).get("status",""))' || true; }

HID="$("$BIN" dispatch "$URL" --census 2000000,2600000,100 --json | python3 -c 'import sys,json; print(json.load(sys.stdin)["hid"])')"
"$BIN" supervisor "$URL" sup 600 --history "$OUT/sup.hist" >/dev/null 2>"$OUT/sup.err" &
PIDS+=($!)
"$BIN" work "$URL" --runner w0 claim "$HID" --pace 0.02 --history "$OUT/w.hist" >/dev/null 2>"$OUT/w0.err" &
WORKER=$!
PIDS+=("$WORKER")
sleep 5
old="$(primary)"
T0="$(date +%s.%N)"
case "$FAULT" in
    switchover) bash "$AUTO" switchover "$DIR" >"$OUT/fault.out" 2>&1 & PIDS+=($!) ;;
    kill-primary) bash "$AUTO" kill-host "$DIR" "$old" >"$OUT/fault.out" 2>&1 ;;
    *) echo "unknown fault $FAULT" >&2; exit 2 ;;
esac
# Watch for 40 s: the promotion, and the replacement a harness would start.
promoted=""
n=1
end=$(( $(date +%s) + 40 ))
while [ "$(date +%s)" -lt "$end" ]; do
    p="$(primary "$old" 2>/dev/null || true)"
    if [ -z "$promoted" ] && [ -n "$p" ]; then
        promoted="$(echo "$(date +%s.%N) - $T0" | bc)"
        [ "$FAULT" = kill-primary ] && bash "$AUTO" start-host "$DIR" "$old" >>"$OUT/fault.out" 2>&1 &
    fi
    if ! kill -0 "$WORKER" 2>/dev/null && [ "$(status "$HID")" = orphaned ]; then
        "$BIN" work "$URL" --runner "w$n" recover "$HID" --pace 0.02 --history "$OUT/w.hist" >/dev/null 2>"$OUT/w$n.err" &
        WORKER=$!
        PIDS+=("$WORKER")
        n=$((n + 1))
    fi
    sleep 0.1
done
python3 - "$OUT" "$T0" "$promoted" "$n" <<'EOF'
import json, sys, glob
out, t0, promoted, workers = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4])
h = [json.loads(l) for l in open(f"{out}/w.hist")]
acks = sorted(e["t"] for e in h if e["op"] == "checkpoint" and e["type"] == "ok")
gaps = [(b - a, a) for a, b in zip(acks, acks[1:]) if b > t0 - 0.5]
pause, at = max(gaps) if gaps else (float("nan"), 0)
sup = [json.loads(l) for l in open(f"{out}/sup.hist")]
orphans = [e for e in sup if e.get("op") == "supervise" and "orphan" in str(e.get("action", ""))]
rode = sum(open(f).read().count("reconnected to the database") for f in glob.glob(f"{out}/w*.err"))
print(f"promotion {promoted or 'none seen'} s; acknowledged-checkpoint pause {pause:.2f} s "
      f"(from {at - t0:+.2f} s after the fault); workers {workers}, orphans {len(orphans)}, rides {rode}; logs {out}")
EOF
