#!/usr/bin/env bash
# The one install step: puts the user tools on PATH, i.e. in ~/.cargo/bin
# (or $CARGO_INSTALL_ROOT/bin), and the Python reference beside them:
#
#   cargo install --locked --path dhp                                # dhp
#   cargo install --locked --path dhp-conform                        # dhp-conform (the judge)
#   cargo install --locked --path adapters/dhp-rs --bin dhp-adapter  # what `dhp-conform --impl ours` runs
#   cargo install --locked --path dhp-chaos --bin dhp-chaos          # dhp-chaos
#   scripts/setup.sh into $XDG_DATA_HOME/dhp-rs/venv                 # dhp-protocol 1.3.0, for --impl reference
#
# The test programs (dhp-mutant-adapter, mutant-worker, mutant-transport,
# mutant-shipper) are not installed: they are broken on purpose.
# Extra arguments go to every `cargo install` (e.g. `--debug` to reuse the
# test build, `--root DIR` to install elsewhere). The installs share the
# workspace's target directory and its dependency builds, so each after the
# first compiles little. The installed tools need no checkout: they find the
# reference in the venv made here (or $DHP_PYTHON), and dhp-chaos sets up
# its PostgreSQL clusters itself (dhp-chaos/src/db/). DHP_INSTALL_NO_VENV=1
# skips the venv.
set -euo pipefail
cd "$(dirname "$0")/.."
installs=(
    "dhp"
    "dhp-conform"
    "adapters/dhp-rs --bin dhp-adapter"
    "dhp-chaos --bin dhp-chaos"
)
for i in "${installs[@]}"; do
    echo "==> cargo install --locked --path $i $*" >&2
    # shellcheck disable=SC2086  # path and --bin are meant to split
    cargo install --locked --path $i "$@"
done
ROOT="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}"
prev=""
for a in "$@"; do
    case "$prev" in --root) ROOT="$a" ;; esac
    case "$a" in --root=*) ROOT="${a#--root=}" ;; esac
    prev="$a"
done
BIN="$ROOT/bin"
echo "installed dhp, dhp-conform, dhp-adapter and dhp-chaos into $BIN" >&2
if [ "${DHP_INSTALL_NO_VENV:-}" != 1 ]; then
    VENV="${XDG_DATA_HOME:-$HOME/.local/share}/dhp-rs/venv"
    echo "==> the reference (dhp-protocol 1.3.0) into $VENV" >&2
    DHP_VENV="$VENV" bash scripts/setup.sh >/dev/null
fi
case ":$PATH:" in
    *":$BIN:"*) ;;
    *) echo "note: $BIN is not on your PATH; add it: export PATH=\"$BIN:\$PATH\"" >&2 ;;
esac
