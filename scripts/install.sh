#!/usr/bin/env bash
# The one install step: puts `dhp` (dhp-core), `dhp-conform` and
# `dhp-chaos` on PATH, i.e. in ~/.cargo/bin (or $CARGO_INSTALL_ROOT/bin).
# It is exactly
#
#   cargo install --locked --path dhp-core      # dhp
#   cargo install --locked --path dhp-conform   # dhp-conform (+ dhp-adapter, its adapter mode)
#   cargo install --locked --path dhp-chaos     # dhp-chaos (+ mutant-worker, a test worker)
#
# Extra arguments go to every `cargo install` (e.g. `--debug` to reuse the
# test build, `--root DIR` to install elsewhere). The three share the
# workspace's target directory and its dependency builds, so the second and
# third install compile only their own crate. The harnesses find the
# reference venv of this checkout (`scripts/setup.sh`), so keep the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
for pkg in dhp-core dhp-conform dhp-chaos; do
    echo "==> cargo install --locked --path $pkg $*" >&2
    cargo install --locked --path "$pkg" "$@"
done
ROOT="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}"
prev=""
for a in "$@"; do
    case "$prev" in --root) ROOT="$a" ;; esac
    case "$a" in --root=*) ROOT="${a#--root=}" ;; esac
    prev="$a"
done
BIN="$ROOT/bin"
echo "installed dhp, dhp-conform and dhp-chaos into $BIN" >&2
case ":$PATH:" in
    *":$BIN:"*) ;;
    *) echo "note: $BIN is not on your PATH; add it: export PATH=\"$BIN:\$PATH\"" >&2 ;;
esac
