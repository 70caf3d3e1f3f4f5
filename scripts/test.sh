#!/usr/bin/env bash
# The test command: sets up the reference venv, then builds and runs every
# test of the workspace (unit, integration, interop against dhp-protocol
# 1.3.0, conformance, a short chaos round, the demo against the mirror).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "test.sh: cargo fmt --check (rustfmt.toml)" >&2
cargo fmt --all -- --check
echo "test.sh: preparing the reference venv (dhp-protocol 1.3.0, mcp, a2a-sdk) in .venv" >&2
bash scripts/setup.sh >/dev/null
export DHP_PYTHON="$PWD/.venv/bin/python"
# One throwaway PostgreSQL cluster for every test binary (fails the run if
# it cannot start; stopped when this script exits). DHP_TEST_PG_URL set by
# the caller uses that server instead.
if [ -z "${DHP_TEST_PG_URL:-}" ]; then
    echo "test.sh: starting a throwaway PostgreSQL cluster" >&2
    pg_out="$(bash scripts/pg.sh start --watch $$ | tail -1)"
    PG_DIR="${pg_out%% *}"
    export DHP_TEST_PG_URL="${pg_out#* }"
    trap 'bash scripts/pg.sh stop "$PG_DIR"' EXIT
fi
echo "test.sh: building the workspace (cargo shows its progress)" >&2
cargo build --workspace --all-targets --locked
echo "test.sh: cargo clippy -D warnings" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked -- --test-threads=2
bash scripts/check_docs.sh  # the READMEs' examples as written, after an install (reuses the build above)
