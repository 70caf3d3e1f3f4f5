#!/usr/bin/env bash
# Self-test of refctl.py against the Python reference: exercises every
# subcommand on a temp dir and exits non-zero on the first failure.
#
#   scripts/pyref/selftest.sh          # uses $DHP_PYTHON or <repo>/.venv
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PY="${DHP_PYTHON:-$REPO/.venv/bin/python}"
REFCTL="$HERE/refctl.py"
# Known knobs; long leases/leader TTL so a slow machine can't lapse them
# (deaths are simulated with `refctl expire`, never by waiting).
while read -r v; do case "$v" in DHP_PYTHON) ;; DHP_*) unset "$v" ;; esac; done < <(compgen -e)
export DHP_LEASE_INTERVAL_S=100 DHP_LEASE_MAX_MISSED=3 DHP_LEADER_TTL_S=600
[ -x "$PY" ] || { echo "selftest: no python at $PY (run scripts/setup.sh)" >&2; exit 2; }

T="$(mktemp -d "${TMPDIR:-/tmp}/refctl-selftest.XXXXXX")"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$T"
}
trap cleanup EXIT

N=0
fail() { echo "selftest FAIL: $*" >&2; exit 1; }

# rc <expected-exit-code> <refctl args...>: run, check exit code, leave the
# JSON output in $OUT
rc() {
    local want="$1"; shift
    local got=0
    OUT="$("$PY" "$REFCTL" "$@" 2>>"$T/stderr.log")" || got=$?
    N=$((N + 1))
    [ "$got" = "$want" ] || fail "refctl $* -> exit $got (want $want): $OUT"
    printf '%s\n' "$OUT" | "$PY" -c 'import json,sys; json.loads(sys.stdin.read())' \
        || fail "refctl $* printed non-JSON: $OUT"
}
ok() { rc 0 "$@"; }
# err <ErrorKind> <args...>
err() {
    local kind="$1"; shift
    rc 1 "$@"
    [ "$(get "d['error_kind']")" = "$kind" ] || fail "refctl $*: want $kind, got $OUT"
}
# get <python expression over d> -> prints it (d = last JSON output)
get() { printf '%s' "$OUT" | "$PY" -c "import json,sys; d=json.load(sys.stdin); v=$1; print(json.dumps(v) if not isinstance(v,str) else v)"; }
# expect <python expression> <expected printed value>
expect() {
    local v; v="$(get "$1")"
    [ "$v" = "$2" ] || fail "expected $1 == $2, got $v (from $OUT)"
}
# expectk <key> <expected>: shorthand for expect "d['key']" 
expectk() { expect "d['$1']" "$2"; }

SCHEMA='{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}'
PSCHEMA='{"type":"object","properties":{"prime_count":{"type":"integer"},"prime_sum":{"type":"integer"}},"required":["prime_count","prime_sum"]}'
A="$T/a"; B="$T/b"

echo "== build-env / dispatch / dispatch-env"
ok build-env --kind t --inputs '{"inline":{"n":1}}' --schema "$SCHEMA" \
   --created-at 2026-01-02T03:04:05.123456+00:00
expect "d['envelope']['provenance']['created_at']" "2026-01-02T03:04:05.123456+00:00"
expect "d['envelope']['contract']['budget']['max_steps']" 100
"$PY" -c 'import json,sys; json.dump(json.loads(sys.argv[1])["envelope"], open(sys.argv[2],"w"))' "$OUT" "$T/env.json"
ok dispatch-env "$A" "$T/env.json"; H0="$(get "d['hid']")"
err IntegrityError dispatch-env "$A" "$T/env.json"   # same hid twice
ok build-env --sdk --kind t --inputs '{"n":1}' --schema "$SCHEMA"
expect "d['envelope']['task']['inputs']" '{"inline": {"n": 1}}'
expect "d['envelope']['contract']['budget']['max_attempts']" 5
"$PY" -c 'import json,sys; e=json.loads(sys.argv[1])["envelope"]; e["task"]["inputs"]["inline"]["n"]=2; json.dump(e, open(sys.argv[2],"w"))' "$OUT" "$T/tampered.json"
err TamperError dispatch-env "$A" "$T/tampered.json"
ok dispatch "$A" --kind t --inputs '{"inline":{"n":1}}' --schema "$SCHEMA" \
   --max-stall-retries 4 --capabilities '{"network":["api.example.com"]}'
H="$(get "d['hid']")"
ok envelope "$A" "$H"
expect "d['envelope']['contract']['max_stall_retries']" 4
expect "d['envelope']['contract']['capabilities']" '{"network": ["api.example.com"]}'
ok dispatch "$A" --sdk --kind t --inputs '{"n":3}' --schema "$SCHEMA" --budget '{"max_steps":2}'
HS="$(get "d['hid']")"
ok envelope "$A" "$HS"
expect "d['envelope']['contract']['budget']" '{"max_steps": 2, "max_spend_usd": 500.0, "max_wallclock_s": 5400.0, "max_attempts": 5}'
expect "d['envelope']['provenance']['created_by']" dhp-api
err ValidationError status "$A" not-a-hid
err UnknownHandoff status "$A" "$(printf 'f%.0s' $(seq 64))"
rc 2 status "$A"
expectk error_kind UsageError

echo "== claim / checkpoint / heartbeat / note-* / fencing"
ok claim "$A" "$H" --runner w1; expectk fence 0
err StateError claim "$A" "$H" --runner w2
ok checkpoint "$A" "$H" --runner w1 --fence 0 --state '{"s":1,"é":"😀","f":1e16}'
expectk seq 0
err ValidationError checkpoint "$A" "$H" --runner w1 --fence 0 --state '[1]'
err FencingError checkpoint "$A" "$H" --runner w2 --fence 0 --state '{"s":9}'
err FencingError checkpoint "$A" "$H" --runner w1 --fence 7 --state '{"s":9}'
ok heartbeat "$A" "$H" --runner w1 --fence 0
expectk expires_in_s 300.0
ok note-step "$A" "$H" --runner w1 --fence 0 --n 2
ok note-spend "$A" "$H" --runner w1 --fence 0 --usd 0.5
err ValidationError note-spend "$A" "$H" --runner w1 --fence 0 --usd -1
ok checkpoint "$A" "$H" --runner w1 --fence 0 --state '{"s":2}'
expectk seq 1
ok checkpoints "$A" "$H"
expect "d['checkpoints'][0]['state']" '{"f": 1e+16, "s": 1, "\u00e9": "\ud83d\ude00"}'
expect "d['rows'][0]['state_json']" '{"f": 1e+16, "s": 1, "\u00e9": "\ud83d\ude00"}'
expect "len(d['rows'][1]['state_hash'])" 64
ok ownership "$A" "$H"
expect "d['ownership']['holder']" w1
expect "d['ownership']['fence']" 0
ok status "$A" "$H"
expectk status running; expectk steps 2; expectk spend_usd 0.5; expectk checkpoints 2

echo "== expire / scan / recover / complete / ack"
ok expire "$A" "$H"; expectk updated 1
err LeaseLost checkpoint "$A" "$H" --runner w1 --fence 0 --state '{"s":3}'
ok scan "$A" --sup sup1
expectk is_leader true
expect "[x['action'] for x in d['actions']]" '["orphaned"]'
ok scan "$A" --sup sup2
expectk is_leader false; expectk actions '[]'
ok leadership "$A"
expect "d['leadership']['holder']" sup1
err FencingError checkpoint "$A" "$H" --runner w1 --fence 0 --state '{"s":3}'
ok status "$A" "$H"
expectk status orphaned; expectk owner __orphaned__
ok recover "$A" "$H" --runner w2; expectk fence 2
err StateError recover "$A" "$H" --runner w3
ok last "$A" "$H"; expectk state '{"s": 2}'
ok checkpoint "$A" "$H" --runner w2 --fence 2 --state '{"s":3}'
expectk seq 2
err FencingError complete "$A" "$HS" --runner w2 --fence 2 --result '{"x":1}'
ok complete "$A" "$H" --runner w2 --fence 2 --result '{"x":7}'
ok complete "$A" "$H" --runner w2 --fence 2 --result '{"x":8}'   # idempotent no-op
ok status "$A" "$H"
expectk status completed; expectk result '{"x": 7}'; expectk attempt 1; expectk owner null
ok ack "$A" "$H"
ok envelope "$A" "$H"
expect "d['envelope']['delivery']['outbox']" '{"ack": true}'
err StateError ack "$A" "$HS"

echo "== schema violation -> failed; release; budget"
ok claim "$A" "$H0" --runner w1
err ValidationError complete "$A" "$H0" --runner w1 --fence 0 --result '{"wrong":1}'
ok status "$A" "$H0"; expectk status failed
ok claim "$A" "$HS" --runner w1
ok release "$A" "$HS" --runner w1 --fence 0 --reason bye
ok status "$A" "$HS"; expectk status pending; expectk owner null
ok claim "$A" "$HS" --runner w1
ok note-step "$A" "$HS" --runner w1 --fence 0 --n 2
err BudgetExceeded note-step "$A" "$HS" --runner w1 --fence 0 --n 1
ok scan "$A" --sup sup1   # supervisor fails it closed: steps 3 > max_steps 2
expect "[(x['hid'] == '$HS', x['action']) for x in d['actions']]" '[[true, "budget-killed"]]'
ok status "$A" "$HS"; expectk status failed; expectk error 'budget exhausted: steps 3 > 2'
ok ownership "$A" "$HS"; expectk ownership null

echo "== transport log: ship / ingest / tamper"
ok dispatch "$A" --sdk --kind prime.census --inputs '{"lo":0,"hi":1000}' --schema "$PSCHEMA"
HP="$(get "d['hid']")"
ok claim "$A" "$HP" --runner w1
ok ship-envelope "$T/t.log" "$A" "$HP"
for i in 0 1 2; do
    ok checkpoint "$A" "$HP" --runner w1 --fence 0 --state "{\"i\":$i,\"u\":\"é\"}"
    expectk seq "$i"
    ok ship-checkpoint "$T/t.log" "$i" --state "{\"i\":$i,\"u\":\"é\"}"
done
ok ingest "$B" "$T/t.log"
expectk handoff_id "$HP"; expectk checkpoints_ingested 3; expectk lines_skipped 0
ok ingest "$B" "$T/t.log"       # idempotent
ok checkpoints "$B" "$HP"; expect "len(d['checkpoints'])" 3
ok status "$B" "$HP"; expectk status pending
printf 'garbage{\n{"type":"checkpoint","seq":3' >> "$T/t.log"
ok ingest "$B" "$T/t.log"; expectk lines_skipped 2
sed 's/"i": 1/"i": 9/' "$T/t.log" > "$T/bad.log"
err TamperError ingest "$T/c" "$T/bad.log"

echo "== suspend / resume"
ok suspend "$A" "$HP" --out "$T/bundle.json"; expectk hid "$HP"
ok status "$A" "$HP"; expectk status suspended
ok resume "$T/d" "$T/bundle.json"; expectk hid "$HP"
err StateError resume "$T/d" "$T/bundle.json"
ok status "$T/d" "$HP"; expectk status pending; expectk attempt 1; expectk checkpoints 3
ok last "$T/d" "$HP"; expectk state '{"i": 2, "u": "\u00e9"}'

echo "== census: die, orphan, recover, complete; ingest on a peer"
ok dispatch "$A" --sdk --kind prime.census --inputs '{"lo":0,"hi":2000,"chunk":100}' --schema "$PSCHEMA"
HC="$(get "d['hid']")"
rc 3 census "$A" "$HC" --runner cw1 --mode claim --ship "$T/census.log" --chunk 100 --stop-after 7
expectk died true; expectk last_seq 6
err StateError census "$A" "$HC" --runner cw2 --mode recover --chunk 100
ok expire "$A" "$HC"
ok scan "$A" --sup sup1
expect "[(x['hid'] == '$HC', x['action']) for x in d['actions']]" '[[true, "orphaned"]]'
ok census "$A" "$HC" --runner cw2 --mode recover --chunk 100
expect "d['result']" '{"lo": 0, "hi": 2000, "prime_count": 303, "prime_sum": 277050, "chunks_done": 13}'
ok ingest "$T/peer" "$T/census.log"; expectk checkpoints_ingested 7
ok census "$T/peer" "$HC" --runner cw3 --mode claim --chunk 500
expect "d['result']['prime_count']" 303; expect "d['result']['prime_sum']" 277050

echo "== net-serve / net-ship"
"$PY" "$REFCTL" net-serve "$T/srv" --port 0 > "$T/serve.out" 2>>"$T/stderr.log" &
SERVER_PID=$!
for _ in $(seq 100); do [ -s "$T/serve.out" ] && break; sleep 0.1; done
OUT="$(cat "$T/serve.out")"
expectk ok true
PORT="$(get "d['port']")"
ok net-ship 127.0.0.1 "$PORT" "$A" "$HC" --local "$T/local.log"
expectk shipped 20
[ "$(wc -l < "$T/local.log")" = 21 ] || fail "local log should have 21 lines"
[ "$(wc -l < "$T/srv/$HC.log")" = 21 ] || fail "server log should have 21 lines"
ok ingest "$T/peer2" "$T/srv/$HC.log"; expectk checkpoints_ingested 20
ok checkpoints "$T/peer2" "$HC"; expect "d['checkpoints'][-1]['state']['next_n']" 2000
rc 1 net-serve "$T/srv" --port "$PORT"     # port busy
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || fail "net-serve exited $? on SIGTERM"
SERVER_PID=""
rc 1 net-ship 127.0.0.1 "$PORT" "$A" "$HC"  # nobody listening

echo "== canonical"
ok canonical '{"b":1E5,"a":[-0.0,1.5e-7,"é"]}'
expectk canonical_hex "$(printf '%s' '{"a":[-0.0,1.5e-07,"é"],"b":100000.0}' | od -An -tx1 | tr -d ' \n')"
expectk state_json '{"a": [-0.0, 1.5e-07, "\u00e9"], "b": 100000.0}'

echo "selftest OK ($N refctl calls)"
