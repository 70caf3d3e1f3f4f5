#!/usr/bin/env bash
# Create <repo>/.venv with the Python reference implementation
# (dhp-protocol 1.3.0) used by gen_vectors.py, refctl.py and the Rust
# interop tests. Idempotent: re-running is cheap and fixes a broken venv.
# The last line of output is the venv's python path.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$REPO/.venv"
PY="$VENV/bin/python"
WANT="1.3.0"
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

echo "$PY"
