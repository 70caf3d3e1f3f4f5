#!/usr/bin/env bash
# Create <repo>/.venv with the Python reference implementation
# (dhp-protocol 1.3.0) and the MCP SDK (mcp 2.3.0) used by gen_vectors.py, refctl.py and the Rust
# interop tests, plus the official a2a-sdk 1.3.0 client (the A2A tests).
# Idempotent: re-running is cheap and fixes a broken venv.
# The last line of output is the venv's python path.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
# DHP_VENV: another place for it (scripts/install.sh: beside the installed tools)
VENV="${DHP_VENV:-$REPO/.venv}"
PY="$VENV/bin/python"
WANT="1.3.0"
# The official Python MCP client/server SDK: the reference's dhp-mcp needs
# it, and the mcp_* tests drive both servers with its client.
MCP_WANT="2.3.0"
BASE_PY="${PYTHON3:-python3}"

venv_ok() {
    [ -x "$PY" ] && "$PY" -c 'import sys, venv; sys.exit(0)' >/dev/null 2>&1 \
        && "$PY" -m pip --version >/dev/null 2>&1
}

if ! venv_ok; then
    if [ -e "$VENV" ]; then
        echo "setup.sh: $VENV is broken, recreating" >&2
        rm -rf "$VENV"
    fi
    "$BASE_PY" -m venv "$VENV"
fi

if ! "$PY" -c "import dhp; assert dhp.__version__ == '$WANT'" >/dev/null 2>&1; then
    "$PY" -m pip install --quiet --disable-pip-version-check "dhp-protocol==$WANT"
    "$PY" -c "import dhp; assert dhp.__version__ == '$WANT', dhp.__version__"
fi

if ! "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_WANT')" >/dev/null 2>&1; then
    "$PY" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_WANT"
    "$PY" -c "import importlib.metadata as m; v = m.version('mcp'); assert v == '$MCP_WANT', v"
fi

# The official A2A SDK: its client drives the `dhp a2a` tests and the
# demo's --a2a mode (httpx and json-rpc come with it).
A2A_WANT="1.3.0"
if ! "$PY" -c "import importlib.metadata as m, a2a.client; assert m.version('a2a-sdk') == '$A2A_WANT'" >/dev/null 2>&1; then
    "$PY" -m pip install --quiet --disable-pip-version-check "a2a-sdk==$A2A_WANT"
    "$PY" -c "import importlib.metadata as m, a2a.client; assert m.version('a2a-sdk') == '$A2A_WANT', m.version('a2a-sdk')"
fi

# libfaketime (Debian package faketime) for `dhp-chaos --clock` and its
# tests: installed when missing if we are root or have password-less sudo
# (a CI runner); otherwise said (the clock tests then fail loudly, --clock
# refuses to run).
if ! ls /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 >/dev/null 2>&1; then
    AS_ROOT=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        AS_ROOT="sudo -n"
    fi
    if { [ "$(id -u)" -eq 0 ] || [ -n "$AS_ROOT" ]; } && command -v apt-get >/dev/null 2>&1; then
        $AS_ROOT env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 \
            && $AS_ROOT env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime >&2 \
            || echo "setup.sh: could not install faketime (dhp-chaos --clock needs it)" >&2
    else
        echo "setup.sh: libfaketime is missing (dhp-chaos --clock needs it): apt-get install faketime" >&2
    fi
fi

echo "$PY"
