#!/usr/bin/env bash
# Regenerate dhp/worker-text-order.txt: the functions one `dhp work` executes
# from start to completion — on SQLite and on PostgreSQL (the lane included) —
# as section patterns (`.text.<mangled path>*`, the hash left out so the
# list survives rebuilds). dhp/build.rs turns the file into a linker script
# that collects those functions into one output section before .text: a
# worker then touches a few dozen 64 KiB windows of program text instead of
# ~145 spread over 13 MB (issue 49, item 5; benches/PROFILES.md).
# A function missing from the list still links, only elsewhere; rerun this after
# large changes to the worker's path.
#
#   scripts/worker-text-order.sh [DHP]   (default target/release/dhp; needs valgrind)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
cd "$REPO"
DHP="${1:-target/release/dhp}"
command -v valgrind >/dev/null || { echo "worker-text-order.sh: valgrind is missing (apt-get install valgrind)" >&2; exit 1; }
[ -x "$DHP" ] || { echo "worker-text-order.sh: no $DHP: cargo build --release -p dhp first" >&2; exit 1; }
tmp="$(mktemp -d)"
pgdir=""
cleanup() { [ -n "$pgdir" ] && bash scripts/pg.sh stop "$pgdir" >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT

profile() { # $1 = store root, $2 = output
    local hid
    hid="$("$DHP" --json dispatch "$1" --census 0,20000,2000 | python3 -c 'import json,sys; print(json.load(sys.stdin)["hid"])')"
    valgrind --tool=callgrind --callgrind-out-file="$2" --compress-strings=no --compress-pos=no --demangle=no \
        "$DHP" --json work "$1" --runner w1 claim "$hid" >/dev/null 2>"$2.err" \
        || { echo "worker-text-order.sh: dhp work failed under callgrind:" >&2; tail -5 "$2.err" >&2; exit 1; }
}

echo "worker-text-order.sh: SQLite worker under callgrind" >&2
mkdir -p "$tmp/store"
profile "$tmp/store" "$tmp/cg.sqlite"
echo "worker-text-order.sh: PostgreSQL worker under callgrind" >&2
read -r pgdir url < <(bash scripts/pg.sh start | tail -n 1)
# The password goes by PGPASSWORD, never in an argv: postgres://user:PW@… → postgres://user@…
rest="${url#postgres://}"
userinfo="${rest%%@*}"
export PGPASSWORD="${userinfo#*:}"
profile "postgres://${userinfo%%:*}@${rest#*@}" "$tmp/cg.pg"

python3 - "$DHP" "$tmp/cg.sqlite" "$tmp/cg.pg" > dhp/worker-text-order.txt <<'PY'
import os, re, sys
binary = os.path.realpath(sys.argv[1])
# First every function exactly as named in this build (hash included: the
# worker's own functions, each instantiation once), in the order callgrind met
# them, SQLite's run first; then the same paths with the hash left out, which
# still match after a dependency or the compiler changed the hashes (and in a
# debug build), at the price of every instantiation of a generic path.
seen, exact, paths = set(), [], []
for path in sys.argv[2:]:
    ob = None
    for line in open(path, errors="replace"):
        if line.startswith("ob="):
            ob = os.path.realpath(line[3:].strip()) if line[3:].strip() else ob
        elif line.startswith("fn=") and ob == binary:
            name = line.split("=", 1)[1].strip()
            if name in seen or not re.match(r"^[A-Za-z0-9_.$]+$", name):
                continue
            seen.add(name)
            exact.append(".text." + name)
            pat = re.sub(r"17h[0-9a-f]{16}E$", "", name)
            if pat != name and pat + "*" not in seen:
                seen.add(pat + "*")
                paths.append(".text." + pat + "*")
out = ["# exact names of this build, then hash-free patterns (scripts/worker-text-order.sh)"] + exact + paths
print("\n".join(out))
PY
echo "worker-text-order.sh: $(grep -vc '^#' dhp/worker-text-order.txt) functions in dhp/worker-text-order.txt" >&2
