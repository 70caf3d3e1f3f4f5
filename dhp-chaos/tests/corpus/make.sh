#!/usr/bin/env bash
# Regenerate the planted-bug entries of this corpus (README.md): run each
# mutant round of tests/it/model_mutants.rs once, then trim.py it.
#   bash dhp-chaos/tests/corpus/make.sh   (from the repository root, after cargo build -p dhp-chaos -p dhp-chaos-mutants --bins)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${CARGO_TARGET_DIR:-target}/debug
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=${DHP_PYTHON:-.venv/bin/python}
small=(--seed 5 --handoffs 2 --dlq-handoffs 0 --impl-history off --failpoint-rate 0 --allow-unchecked all --quiet --dhp "$bin/dhp")
run() { # NAME ARGS...
  local name=$1; shift
  "$bin/dhp-chaos" "$@" --out "$tmp/$name" >/dev/null || true
  echo "== $name" >&2; python3 "$here/trim.py" "$tmp/$name/round-0000" "$here" "$name"
}
run no-leader-row "${small[@]}" --chunks 60 --supervisors "$bin/mutant-supervisor --mode no-leader-row" --faults kill-worker=1
run replace-leader "${small[@]}" --chunks 60 --supervisors "$bin/mutant-supervisor --mode replace-leader" --faults kill-worker=1
run recover-no-bump "${small[@]}" --chunks 60 --workers "$bin/mutant-worker --mode recover-no-bump" --faults kill-worker=1
run skip-fence --seed 3 --handoffs 2 --dlq-handoffs 0 --chunks 100 --impl-history off --failpoint-rate 0 \
  --allow-unchecked all --quiet --dhp "$bin/dhp" --workers "$bin/mutant-worker --mode skip-fence" --faults pause=1 --fault-interval 0.3,0.6
run complete-twice "${small[@]}" --chunks 8 --workers "$bin/mutant-worker --mode complete-twice" --faults kill-follower=1
run undlq --seed 5 --handoffs 1 --chunks 20 --dlq-handoffs 1 --dlq-max-attempts 2 --impl-history off --failpoint-rate 0 \
  --allow-unchecked all --quiet --dhp "$bin/dhp" --supervisors "$bin/mutant-supervisor --mode undlq" --faults kill-worker=1
DHP_CHAOS_SHIM_MUTANT=no-fence run reference-no-fence --seed 21 --handoffs 2 --dlq-handoffs 0 --chunks 80 --base 200000 \
  --workers python --python "$py" --allow-known-reference-bugs --failpoint-rate 0 --faults stop-at-chunk=1 \
  --fault-interval 0.4,0.8 --allow-unchecked all --quiet --dhp "$bin/dhp"
