#!/usr/bin/env bash
# Checkpoints/s shipped over loopback, in one run: our TcpShipper -> our
# `dhp transport` (sync and async), and the reference's NetShipper -> its
# TransportServer (dhp-protocol 1.3.0), plus the two mixed pairs.
# Release build; N checkpoints per figure (default 5000).
#   scripts/measure_tcp.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
export DHP_PYTHON="${DHP_PYTHON:-$PWD/.venv/bin/python}"
export TCP_MEASURE_N="${1:-5000}"
cargo test --release -p dhp --test it tcp::measure -- --ignored --nocapture 2>&1 \
    | sed -n '/checkpoints\/s over loopback/,/^  mixed.*TransportServer/p'
