#!/usr/bin/env bash
# The Debian tools the tests and dhp-chaos's database, host and clock modes
# need, installed here and only here: never from inside a test, nor from
# scripts/pg.sh, pg-cluster.sh, pg-auto.sh or dhp-chaos's database control
# plane (dhp-chaos/src/db/), which say which tool is missing instead.
#
#   scripts/services.sh           install whatever is missing (as root; CI's
#                                 scripts/test.sh runs it before the tests)
#   scripts/services.sh --check   say what is missing and exit 1 if anything is
#
# The tools: PostgreSQL's server binaries, pg_auto_failover for that major
# (pg_autoctl), faketime, openssl, iproute2 (ip), iptables, util-linux
# (setpriv, runuser: the private-cluster tests log in as `nobody`), headless
# Chromium (the page tests), Prometheus (the metrics test) and shellcheck
# (scripts/test.sh checks every shell script with it). Prints one
# line per tool with its path.
set -euo pipefail

check_only=""
case "${1:-}" in
    --check) check_only=1 ;;
    "") ;;
    *) echo "usage: scripts/services.sh [--check]" >&2; exit 2 ;;
esac

pgbin() {
    local d
    for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r); do
        if [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
    done
}

# TOOL PACKAGE pairs still missing (PostgreSQL's own first: the
# pg_auto_failover package is named after its major).
missing() {
    local d major
    d="$(pgbin)"
    if [ -z "$d" ]; then
        echo "initdb postgresql"
    else
        major="$(basename "$(dirname "$d")")"
        command -v pg_autoctl >/dev/null 2>&1 || echo "pg_autoctl postgresql-$major-auto-failover"
    fi
    local t
    for t in faketime:faketime openssl:openssl ip:iproute2 iptables:iptables setpriv:util-linux \
        runuser:util-linux chromium:chromium prometheus:prometheus shellcheck:shellcheck; do
        command -v "${t%%:*}" >/dev/null 2>&1 || echo "${t%%:*} ${t#*:}"
    done
}

report() {
    local t
    echo "services.sh: PostgreSQL $(pgbin)"
    for t in pg_autoctl faketime openssl ip iptables setpriv runuser chromium prometheus shellcheck; do
        echo "services.sh: $t $(command -v "$t")"
    done
}

need="$(missing)"
if [ -z "$need" ]; then
    report
    exit 0
fi
if [ -n "$check_only" ]; then
    echo "services.sh: missing (tool package):" >&2
    printf '  %s\n' "${need//$'\n'/$'\n  '}" >&2
    exit 1
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "services.sh: missing, and this is not root with apt-get: install these packages:" >&2
    printf '  %s\n' "${need//$'\n'/$'\n  '}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# one install at a time on this machine (two CI runs side by side)
exec 9>/tmp/dhp-deb.lock
flock 9
apt-get update -qq >&2
# twice at most: PostgreSQL's major names pg_auto_failover's package
for round in 1 2; do
    need="$(missing)"
    [ -z "$need" ] && break
    echo "services.sh: installing $(echo "$need" | cut -d' ' -f2 | sort -u | tr '\n' ' ')(round $round)" >&2
    # shellcheck disable=SC2046
    apt-get install -y -qq --no-install-recommends $(echo "$need" | cut -d' ' -f2 | sort -u) >&2
done
need="$(missing)"
if [ -n "$need" ]; then
    echo "services.sh: still missing after installing:" >&2
    printf '  %s\n' "${need//$'\n'/$'\n  '}" >&2
    exit 1
fi
report
