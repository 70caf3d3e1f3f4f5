#!/usr/bin/env bash
# Make sure a Debian-packaged tool is installed, installing its package when
# it is missing (CI runs as root with the Debian registry reachable), then
# print the tool's absolute path as the last line.
#
#   scripts/deb.sh chromium          # headless Chromium (the page tests)
#   scripts/deb.sh prometheus        # a real Prometheus server (the metrics test)
#   scripts/deb.sh TOOL PACKAGE      # a tool whose package has another name
#
# Exits 1, saying why, when the tool is missing and cannot be installed:
# a test that needs it must fail loudly, never skip.
set -euo pipefail

tool="${1:?usage: scripts/deb.sh TOOL [PACKAGE]}"
pkg="${2:-$tool}"

if ! command -v "$tool" >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "deb.sh: $tool is missing and this is not root: apt-get install $pkg" >&2
        exit 1
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "deb.sh: $tool is missing and there is no apt-get to install $pkg" >&2
        exit 1
    fi
    echo "deb.sh: installing $pkg" >&2
    export DEBIAN_FRONTEND=noninteractive
    # One install at a time: parallel tests may ask for tools together.
    exec 9>/tmp/dhp-deb.lock
    flock 9
    if ! command -v "$tool" >/dev/null 2>&1; then
        apt-get update -qq >&2
        apt-get install -y -qq --no-install-recommends "$pkg" >&2
    fi
    command -v "$tool" >/dev/null 2>&1 || { echo "deb.sh: no $tool after installing $pkg" >&2; exit 1; }
fi
command -v "$tool"
