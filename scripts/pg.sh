#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and benchmarks.
#
#   scripts/pg.sh start [--tls] [--watch PID]
#                                        start one; the LAST line of output is
#                                        `DIR URL` (URL: postgres://…, password
#                                        auth over 127.0.0.1, fsync=on). With
#                                        --watch, the cluster stops and is
#                                        removed once process PID has exited.
#                                        With --tls, the server also speaks TLS
#                                        (ssl=on) with a throwaway CA made by
#                                        openssl: DIR/tls/ca.crt signed the
#                                        server certificate (CN and SAN
#                                        localhost, SAN IP 127.0.0.1; the
#                                        server also listens on 127.0.0.2,
#                                        which the certificate does not name);
#                                        DIR/tls/other-ca.crt is an unrelated CA
#                                        (for tests of a wrong CA).
#   scripts/pg.sh stop DIR               stop it (fast) and remove DIR.
#   scripts/pg.sh crash DIR              `pg_ctl stop -m immediate` (a crash).
#   scripts/pg.sh restart DIR            start a stopped or crashed cluster again.
#
# DHP_PG_COMMIT_DELAY=µs and DHP_PG_COMMIT_SIBLINGS=n set the server's
# group-commit knobs (`commit_delay`, `commit_siblings`; default: the
# server's, 0 and 5). fsync and synchronous_commit always stay on.
#
# Needs the Debian `postgresql` package (and `faketime`, which the clock
# skew test needs, and `openssl` for --tls): scripts/services.sh installs
# them; here a missing one is an error naming it. initdb refuses to run as root, so as root the
# server runs as the `postgres` user. Every failure exits non-zero: tests
# never skip because PostgreSQL is missing.
set -euo pipefail

PGBIN="${DHP_PGBIN:-}"
find_pgbin() {
    if [ -n "$PGBIN" ] && [ -x "$PGBIN/initdb" ]; then return 0; fi
    local d
    for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r); do
        if [ -x "$d/initdb" ]; then PGBIN="$d"; return 0; fi
    done
    return 1
}

# Installs happen in scripts/services.sh (CI's scripts/test.sh runs it),
# never here, nor from dhp-chaos (whose src/db/ sets up the same layout).
install_deps() {
    local need=()
    find_pgbin || need+=(postgresql)
    command -v faketime >/dev/null 2>&1 || need+=(faketime)
    command -v openssl >/dev/null 2>&1 || need+=(openssl)
    if [ ${#need[@]} -gt 0 ]; then
        echo "pg.sh: missing ${need[*]}: run scripts/services.sh as root (it installs them)" >&2
        exit 1
    fi
}

# Run a command as the cluster owner (postgres when we are root).
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

pg_start_dir() {
    local dir="$1" port opts
    port="$(cat "$dir/port")"
    opts="-c port=$port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir -c fsync=on"
    opts="$opts -c synchronous_commit=on -c max_connections=400"
    if [ -f "$dir/tls/server.key" ]; then
        # Also on 127.0.0.2: an address the certificate does not name.
        opts="$opts -c ssl=on -c ssl_cert_file=$dir/tls/server.crt -c ssl_key_file=$dir/tls/server.key"
        opts="$opts -c listen_addresses=127.0.0.1,127.0.0.2"
    fi
    if [ -f "$dir/extra_opts" ]; then opts="$opts $(cat "$dir/extra_opts")"; fi
    as_owner "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$opts" \
        start >&2 || { cat "$dir/server.log" >&2; exit 1; }
}

# A throwaway CA, a server certificate it signed, and an unrelated CA.
make_certs() {
    local t="$1/tls"
    mkdir -p "$t"
    (
        cd "$t"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=dhp test CA" \
            -keyout ca.key -out ca.crt
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=dhp other CA" \
            -keyout other-ca.key -out other-ca.crt
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' >ext.cnf
        openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
            -extfile ext.cnf -out server.crt
        chmod 600 server.key ca.key other-ca.key
        chmod 644 ca.crt other-ca.crt server.crt
    ) >"$1/openssl.log" 2>&1 || { cat "$1/openssl.log" >&2; exit 1; }
}

cmd_start() {
    local watch="" tls=""
    while [ $# -gt 0 ]; do
        case "$1" in
            --watch) watch="${2:?--watch needs a pid}"; shift 2 ;;
            --tls) tls=1; shift ;;
            *) echo "pg.sh start: unknown option $1" >&2; exit 2 ;;
        esac
    done
    install_deps
    local dir port pw
    dir="$(mktemp -d /tmp/dhp-pg.XXXXXX)"
    # private: the socket (trust auth for local connections), the pwfile and
    # the data are reachable by the owner (and root) only, never by another local user
    chmod 700 "$dir"
    pw="dhp-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
    port="$(free_port)"
    echo "$port" >"$dir/port"
    (umask 077 && printf '%s\n' "$pw" >"$dir/pwfile")
    chmod 600 "$dir/pwfile"
    local extra=""
    if [ -n "${DHP_PG_COMMIT_DELAY:-}" ]; then extra="$extra -c commit_delay=$DHP_PG_COMMIT_DELAY"; fi
    if [ -n "${DHP_PG_COMMIT_SIBLINGS:-}" ]; then extra="$extra -c commit_siblings=$DHP_PG_COMMIT_SIBLINGS"; fi
    if [ -n "$extra" ]; then echo "$extra" >"$dir/extra_opts"; fi
    if [ -n "$tls" ]; then make_certs "$dir"; fi
    if [ "$(id -u)" -eq 0 ]; then chown -R postgres: "$dir"; fi
    as_owner "$PGBIN/initdb" -D "$dir/data" -U postgres --pwfile="$dir/pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    if [ -n "$tls" ]; then
        as_owner sh -c "echo 'host all all 127.0.0.2/32 scram-sha-256' >> '$dir/data/pg_hba.conf'"
    fi
    pg_start_dir "$dir"
    as_owner "$PGBIN/createdb" -h "$dir" -p "$port" -U postgres dhp >&2
    if [ -n "$watch" ]; then
        # Detached: outlives this script, not the watched process.
        setsid nohup bash "$0" _watch "$watch" "$dir" >/dev/null 2>&1 </dev/null &
    fi
    echo "$dir postgres://postgres:$pw@127.0.0.1:$port/dhp"
}

cmd_stop() {
    local dir="${1:?usage: pg.sh stop DIR}"
    find_pgbin || true
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 \
            || as_owner "$PGBIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    case "$dir" in /tmp/dhp-pg.*) rm -rf "$dir" ;; esac
}

cmd_crash() {
    local dir="${1:?usage: pg.sh crash DIR}"
    find_pgbin
    as_owner "$PGBIN/pg_ctl" -D "$dir/data" -m immediate -w stop >&2
}

cmd_restart() {
    local dir="${1:?usage: pg.sh restart DIR}"
    find_pgbin
    pg_start_dir "$dir"
}

cmd_watch() {
    local pid="$1" dir="$2"
    while kill -0 "$pid" 2>/dev/null; do sleep 1; done
    cmd_stop "$dir"
}

case "${1:-}" in
    start) shift; cmd_start "$@" ;;
    stop) shift; cmd_stop "$@" ;;
    crash) shift; cmd_crash "$@" ;;
    restart) shift; cmd_restart "$@" ;;
    _watch) shift; cmd_watch "$@" ;;
    *) echo "usage: pg.sh start [--tls] [--watch PID] | stop DIR | crash DIR | restart DIR" >&2; exit 2 ;;
esac
