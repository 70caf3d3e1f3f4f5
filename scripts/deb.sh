#!/usr/bin/env bash
# Print the absolute path of a Debian-packaged tool the tests need, or fail
# saying which script installs it. Tests never install anything: the
# project's scripts/services.sh does, as root, before the tests run (CI's
# scripts/test.sh calls it).
#
#   scripts/deb.sh chromium          # headless Chromium (the page tests)
#   scripts/deb.sh prometheus        # a real Prometheus server (the metrics test)
#
# Exits 1, saying why, when the tool is missing: a test that needs it must
# fail loudly, never skip.
set -euo pipefail

tool="${1:?usage: scripts/deb.sh TOOL}"
if ! command -v "$tool" >/dev/null 2>&1; then
    echo "deb.sh: $tool is missing: run scripts/services.sh as root (it installs every tool the tests need)" >&2
    exit 1
fi
command -v "$tool"
