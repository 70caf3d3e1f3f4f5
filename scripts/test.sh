#!/usr/bin/env bash
# The test command: sets up the reference venv, then builds and runs every
# test of the workspace (unit, integration, interop against dhp-protocol
# 1.3.0, conformance, a short chaos round, the demo against the mirror).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
export DHP_PYTHON="$PWD/.venv/bin/python"
cargo build --workspace --all-targets --locked
cargo test --workspace --locked -- --test-threads=2
