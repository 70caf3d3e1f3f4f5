#!/usr/bin/env bash
# Runs the examples of the READMEs as written, so that the documentation
# cannot rot. CI runs it at the end of scripts/test.sh.
#
# 1. The install step of README.md (`scripts/install.sh`), into a temporary
#    root and with `--debug`, so it reuses the test build instead of
#    compiling everything again in release mode; its bin directory goes
#    first on PATH, so the examples use exactly what the install put there.
# 2. Every ```sh block preceded by the line `<!-- check-docs: run -->` in
#    README.md and the per-crate READMEs, each in its own `bash -euo
#    pipefail` from the repository root, with a time limit. A README
#    without any such block fails the check (the markers must not vanish).
#    Blocks without the marker are left alone on purpose: they need a second
#    host, root, the network, a release build (`benches/compare.sh`; its
#    code paths run in benches/tests/it/smoke.rs) or take long.
#    Each runs with a TMPDIR of its own, which must be empty afterwards: an
#    example that leaves temporary directories behind fails.
# 3. Relative links in the READMEs and docs/*.md point to files that exist,
#    nothing refers to paths outside the repository, and every dependency
#    has one feature set across the README's builds (check_features.sh).
#
# Usage: scripts/check_docs.sh [FILE.md ...]   (default: every README)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"

FILES=("$@")
if [ ${#FILES[@]} -eq 0 ]; then
    FILES=(README.md dhp/README.md dhp-conform/README.md dhp-chaos/README.md demo/README.md benches/README.md)
fi
BLOCK_TIMEOUT="${CHECK_DOCS_TIMEOUT:-900}"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/dhp-check-docs.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

fail=0
bad() { echo "check_docs: FAIL: $*" >&2; fail=1; }

# ---- 3. links and foreign paths (cheap, first) ----
for f in README.md */README.md */*/README.md docs/*.md docs/*/*.md dhp-conform/ADAPTERS.md dhp-chaos/CONTRACT.md; do
    [ -f "$f" ] || continue
    dir="$(dirname "$f")"
    # [text](target) with a relative target; anchors and URLs skipped.
    { grep -o '\]([^)#][^)]*)' "$f" || true; } | sed -E 's/^\]\(//; s/\)$//; s/#.*//' | while read -r target; do
        case "$target" in http://*|https://*|mailto:*|"") continue ;; esac
        if [ ! -e "$dir/$target" ]; then
            case "$target" in
                # Written by other engineers in parallel; present after merge.
                torn-states.md|cli.md|log-chain.md|fuzzing.md|postgres.md|../docs/cli.md|docs/cli.md|docs/torn-states.md|docs/log-chain.md|docs/fuzzing.md|docs/postgres.md)
                    echo "check_docs: note: $f links to $target, not in this tree yet" >&2 ;;
                *) echo "$f: broken link to $target" ;;
            esac
        fi
    done
done > "$WORK/links.txt"
if [ -s "$WORK/links.txt" ]; then bad "broken links:"; cat "$WORK/links.txt" >&2; fi
if grep -n -E '\.\./shared|/work/|example\.invalid' -- README.md ./*/README.md docs/*.md docs/*/*.md Cargo.toml ./*/Cargo.toml >"$WORK/foreign.txt" 2>/dev/null; then
    bad "references to paths outside the repository or placeholders:"
    cat "$WORK/foreign.txt" >&2
fi

# The README promises one build of every dependency for all its commands.
if ! bash scripts/check_features.sh >"$WORK/features.txt" 2>&1; then
    bad "dependency features differ between builds (each is compiled twice):"
    cat "$WORK/features.txt" >&2
fi

# ---- 1. the install step ----
echo "check_docs: scripts/setup.sh (reference venv)" >&2
PY="$(bash scripts/setup.sh | tail -n 1)"
export DHP_PYTHON="$PY"
echo "check_docs: scripts/install.sh --debug --root $WORK/root" >&2
# the install's reference venv goes under $WORK too (XDG_DATA_HOME)
if ! XDG_DATA_HOME="$WORK/data" bash scripts/install.sh --debug --root "$WORK/root" >"$WORK/install.log" 2>&1; then
    bad "scripts/install.sh failed:"
    tail -n 30 "$WORK/install.log" >&2
    exit 1
fi
for b in dhp dhp-conform dhp-adapter dhp-chaos; do
    [ -x "$WORK/root/bin/$b" ] || bad "scripts/install.sh did not install $b"
done
for b in dhp-mutant-adapter mutant-worker mutant-transport mutant-shipper; do
    [ ! -e "$WORK/root/bin/$b" ] || bad "scripts/install.sh installed the test program $b"
done
export PATH="$WORK/root/bin:$PATH"

# ---- 1b. the installed tools work outside the checkout ----
# No checkout above the working directory, no DHP_PYTHON, no cargo: the
# judge finds dhp-rs's adapter on PATH and the reference in the install's venv.
mkdir -p "$WORK/outside"
echo "check_docs: the installed dhp-conform outside the checkout (ours, reference; core level)" >&2
for impl in ours reference; do
    if ! (cd "$WORK/outside" && env -u DHP_PYTHON -u CARGO -u CARGO_MANIFEST_DIR XDG_DATA_HOME="$WORK/data" \
        dhp-conform --impl "$impl" --level core >"$WORK/outside-$impl.log" 2>&1); then
        bad "installed dhp-conform --impl $impl --level core failed outside the checkout:"
        tail -n 20 "$WORK/outside-$impl.log" >&2
    fi
done

# ---- 2. the marked examples ----
extract() {
    awk '/<!-- check-docs: run -->/ { armed = 1; next }
         armed && /^```sh/       { inside = 1; n++; next }
         inside && /^```$/       { inside = 0; armed = 0; next }
         inside                  { print > (out "/block-" n ".sh") }
         END                     { print n + 0 }' out="$1" "$2"
}
total=0
for f in "${FILES[@]}"; do
    d="$WORK/blocks/${f//\//_}"
    mkdir -p "$d"
    n="$(extract "$d" "$f")"
    if [ "$n" -eq 0 ]; then
        bad "$f has no <!-- check-docs: run --> example"
        continue
    fi
    for i in $(seq 1 "$n"); do
        block="$d/block-$i.sh"
        total=$((total + 1))
        echo "check_docs: $f example $i/$n" >&2
        start=$SECONDS
        # A private TMPDIR per example: whatever is left in it afterwards is
        # a temporary file the example (quickstart, demo, ...) failed to
        # clean up.
        tmp="$WORK/tmp/$total"
        mkdir -p "$tmp"
        if TMPDIR="$tmp" timeout "$BLOCK_TIMEOUT" bash -euo pipefail "$block" >"$block.log" 2>&1; then
            echo "check_docs:   ok ($((SECONDS - start)) s)" >&2
            if [ -n "$(ls -A "$tmp")" ]; then
                bad "$f example $i left temporary files behind: $(find "$tmp" -mindepth 1 -maxdepth 1 -printf '%f ' | head -c 300)"
            fi
        else
            rc=$?
            bad "$f example $i (exit $rc):"
            sed 's/^/    | /' "$block" >&2
            echo "    output (last 30 lines):" >&2
            tail -n 30 "$block.log" | sed 's/^/    > /' >&2
        fi
        cd "$REPO"
    done
done

if [ "$fail" -ne 0 ]; then
    echo "check_docs: FAILED" >&2
    exit 1
fi
echo "check_docs: install step and $total examples ok" >&2
