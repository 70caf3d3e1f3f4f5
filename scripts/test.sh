#!/usr/bin/env bash
# The test command: sets up the reference venv and a throwaway PostgreSQL,
# then builds and runs every test of the workspace (unit, integration,
# interop against dhp-protocol 1.3.0, conformance, short chaos rounds, the
# demo against the mirror), then the READMEs' examples. CI runs exactly this.
#
# Each phase is announced as it starts (`test.sh [3/10] ...`); at the end,
# pass or fail, one table gives every phase's time and the total. Tests run
# under cargo-nextest (each test in its own process, two at a time, progress
# shown, one final count). Everything the tests write under $TMPDIR goes to
# one directory of this run, reported and removed at exit.
set -euo pipefail
cd "$(dirname "$0")/.."

PHASES=(fmt venv services shellcheck postgres build clippy tests doctests no-recompile docs)
declare -a DONE=()
T0=$SECONDS
CURRENT=""
PHASE_T=0
report() {
    local rc=$?
    set +e
    local last=FAILED
    [ "$rc" -eq 0 ] && last=ok
    [ -n "$CURRENT" ] && DONE+=("$CURRENT $((SECONDS - PHASE_T)) $last")
    {
        echo
        echo "test.sh: phase times"
        for d in "${DONE[@]}"; do
            # shellcheck disable=SC2086  # name, seconds, status
            set -- $d
            printf '  %-14s %4d min %02d s  %s\n' "$1" $(($2 / 60)) $(($2 % 60)) "${3:-ok}"
        done
        local t=$((SECONDS - T0))
        printf '  %-14s %4d min %02d s  load average %s\n' total $((t / 60)) $((t % 60)) "$(cut -d' ' -f1-3 /proc/loadavg)"
        if [ -n "${RUN_TMP:-}" ] && [ -d "$RUN_TMP" ]; then
            local left
            left=$(find "$RUN_TMP" -mindepth 1 -maxdepth 1 | wc -l)
            [ "$left" -gt 0 ] && echo "  left in \$TMPDIR by the tests: $left entries, $(du -sh "$RUN_TMP" | cut -f1) (removed)"
            rm -rf "$RUN_TMP"
        fi
        if [ "$rc" -eq 0 ]; then echo "test.sh: all phases passed"; else echo "test.sh: FAILED in phase ${CURRENT:-?} (exit $rc)"; fi
    } >&2
    [ -n "${PG_DIR:-}" ] && bash scripts/pg.sh stop "$PG_DIR" >/dev/null 2>&1
    exit "$rc"
}
trap report EXIT
phase() {
    [ -n "$CURRENT" ] && DONE+=("$CURRENT $((SECONDS - PHASE_T)) ok")
    CURRENT="$1"
    PHASE_T=$SECONDS
    local i=0 n
    for n in "${PHASES[@]}"; do i=$((i + 1)); [ "$n" = "$1" ] && break; done
    echo "test.sh [$i/${#PHASES[@]}] $1: $2" >&2
}

phase fmt "cargo fmt --check (rustfmt.toml)"
cargo fmt --all -- --check

phase venv "the reference venv (dhp-protocol 1.3.0, mcp, a2a-sdk) in .venv"
bash scripts/setup.sh >/dev/null
export DHP_PYTHON="$PWD/.venv/bin/python"

# One throwaway PostgreSQL cluster for every test (fails the run if it
# cannot start; stopped when this script exits). DHP_TEST_PG_URL set by the
# caller uses that server instead.
# Every Debian tool the tests use (PostgreSQL, pg_auto_failover, faketime,
# iptables, Chromium, Prometheus, shellcheck, ...) is installed here, once:
# no test and no installed program installs anything.
phase services "the Debian tools the tests need (scripts/services.sh)"
bash scripts/services.sh >/dev/null

phase shellcheck "shellcheck of every shell script"
git ls-files -z '*.sh' .ci/run | xargs -0 shellcheck

phase postgres "a throwaway PostgreSQL cluster"
if [ -z "${DHP_TEST_PG_URL:-}" ]; then
    pg_out="$(bash scripts/pg.sh start --watch $$ | tail -1)"
    PG_DIR="${pg_out%% *}"
    export DHP_TEST_PG_URL="${pg_out#* }"
else
    echo "  using DHP_TEST_PG_URL from the environment" >&2
fi

phase build "every target of the workspace (cargo shows its progress)"
cargo build --workspace --all-targets --locked
# Every program the tests run was built just now: dhp-testkit need not ask
# cargo again in each test process.
export DHP_TEST_PREBUILT=1

phase clippy "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

if ! cargo nextest --version >/dev/null 2>&1; then
    echo "test.sh: cargo-nextest is missing: installing it from crates.io" >&2
    cargo install --locked cargo-nextest
fi
RUN_TMP="$(mktemp -d "${TMPDIR:-/tmp}/dhp-test.XXXXXX")"
# The size check (no non-test file over 700 lines, no fn over 120, beyond
# scripts/sizes-allowlist.txt) is one of these tests: scripts/sizes.sh.
phase tests "cargo nextest (one test binary per crate, each test its own process)"
TMPDIR="$RUN_TMP" cargo nextest run --workspace --locked --no-fail-fast

phase doctests "cargo test --doc"
TMPDIR="$RUN_TMP" cargo test --workspace --doc --locked -q

phase no-recompile "switching between the README's cargo commands compiles nothing"
bash scripts/check_features.sh
# PACKAGE:CRATES-IT-MAY-COMPILE. dhp-core's `failpoints` feature is on in the
# workspace build and off in `cargo build -p dhp`, `-p dhp-core` and in the
# benches (an installed `dhp` cannot be made to kill itself), so those
# rebuild dhp-core itself (and the program; the benches and dhp-testkit,
# which they link) once; no other dependency may recompile. `*`: the bare
# library (no workspace-hack, issue 46) compiles its own feature set of a
# few shared crates the first time; it is built twice and the second build,
# and every build after it, must compile nothing.
for spec in dhp-conform: demo: dhp-chaos: dhp-adapter: dhp-core:* dhp-core: dhp:dhp-core,dhp dhp-benches:dhp-core,dhp-testkit,dhp-benches dhp-core: dhp-chaos:; do
    p="${spec%%:*}"
    allowed=",${spec#*:},"
    log=$(cargo build -p "$p" --locked -v 2>&1) || { echo "$log" >&2; echo "test.sh: cargo build -p $p failed" >&2; exit 1; }
    built=$( (grep -E '^ *Compiling' <<<"$log" || true) | awk '{print $2}' | sort -u | paste -sd, -)
    echo "  cargo build -p $p: compiled ${built:-nothing}" >&2
    [ "$allowed" = ",*," ] && continue
    for c in ${built//,/ }; do
        if [[ "$allowed" != *",$c,"* ]]; then
            # cargo -v says why each crate was rebuilt ("Dirty …: the file … has changed").
            grep -E '^ *(Dirty|Compiling)' <<<"$log" | sed 's/^/    /' >&2
            echo "test.sh: cargo build -p $p recompiled $c after the workspace build" >&2
            exit 1
        fi
    done
done

phase docs "the READMEs' examples as written, after an install (reuses the build above)"
bash scripts/check_docs.sh
