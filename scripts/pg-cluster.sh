#!/usr/bin/env bash
# A throwaway REPLICATED PostgreSQL cluster (the layout dhp-chaos's rounds
# set up with src/db/cluster.rs; this script is for tests and people): a primary,
# a synchronous standby and an asynchronous standby, three servers on
# 127.0.0.1 (one port each; not network namespaces), streaming replication.
#
# Failover manager: the harness itself (`pg_ctl promote`), NOT Patroni or
# pg_auto_failover; reports say `failover-manager: harness (pg_ctl promote)`.
#
#   scripts/pg-cluster.sh start [--async] [--watch PID]
#        LAST line of output: `DIR URL`, URL a multi-host
#        postgres://postgres:PW@127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2/dhp?target_session_attrs=read-write
#        --async: synchronous_standby_names='' (every standby asynchronous).
#   scripts/pg-cluster.sh roles DIR      `primary sync async` node names (n0 n1 n2, …).
#   scripts/pg-cluster.sh detach DIR     the promotion candidate (the sync standby) stops
#                                        streaming (primary_conninfo='' + reload): WAL
#                                        shipping to it stops. With synchronous replication
#                                        commits then wait; with asynchronous they do not.
#   scripts/pg-cluster.sh crash DIR      crash the primary (`pg_ctl stop -m immediate`); it is
#                                        fenced: never started again as a primary.
#   scripts/pg-cluster.sh stop-primary DIR  a planned switchover: stop the primary cleanly
#                                        (`-m fast`, its WAL shipped first); fenced the same way.
#   scripts/pg-cluster.sh promote DIR    promote the candidate (`pg_ctl promote`; refused unless
#                                        the primary is fenced), make it the primary;
#                                        prints `promoted NODE LSN` (LSN: its WAL end).
#   scripts/pg-cluster.sh rejoin DIR     rebuild the two other nodes from the new primary
#                                        (pg_basebackup; what Patroni's reinit does) and start
#                                        them as its standbys (the next in line synchronous).
#   scripts/pg-cluster.sh stop DIR       stop every node and remove DIR.
#
# Every failure exits non-zero. Needs the Debian `postgresql` package
# (scripts/services.sh installs it, as root).
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

# Installs happen in scripts/services.sh, never here, nor from dhp-chaos
# (whose src/db/cluster.rs sets up the same layout).
install_deps() {
    if ! find_pgbin; then
        echo "pg-cluster.sh: PostgreSQL is missing: run scripts/services.sh as root (it installs it)" >&2
        exit 1
    fi
}

as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

port_of() { cat "$1/$2/port"; }

# psql on node N over its Unix socket (trust), database dhp, one value out.
q() {
    local dir="$1" n="$2" sql="$3"
    as_owner "$PGBIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$dir/$n" -p "$(port_of "$dir" "$n")" -U postgres \
        -d "${DB:-dhp}" -c "$sql"
}

start_node() {
    local dir="$1" n="$2" port opts
    port="$(port_of "$dir" "$n")"
    opts="-c port=$port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir/$n -c fsync=on"
    opts="$opts -c synchronous_commit=on -c max_connections=400 -c cluster_name=$n -c wal_level=replica"
    opts="$opts -c max_wal_senders=10 -c wal_keep_size=256MB -c hot_standby=on -c wal_receiver_status_interval=1s"
    opts="$opts -c wal_sender_timeout=5s -c wal_receiver_timeout=5s"
    as_owner "$PGBIN/pg_ctl" -D "$dir/$n/data" -l "$dir/$n/server.log" -w -t 60 -o "$opts" start >&2 \
        || { cat "$dir/$n/server.log" >&2; exit 1; }
}

conninfo() {
    local dir="$1" to="$2" app="$3"
    echo "host=127.0.0.1 port=$(port_of "$dir" "$to") user=postgres password=$(cat "$dir/pwfile") application_name=$app"
}

# A fresh standby NODE of primary FROM: pg_basebackup, standby.signal, primary_conninfo.
make_standby() {
    local dir="$1" n="$2" from="$3"
    rm -rf "$dir/$n/data"
    as_owner env PGPASSWORD="$(cat "$dir/pwfile")" "$PGBIN/pg_basebackup" -D "$dir/$n/data" -X stream -c fast \
        -h 127.0.0.1 -p "$(port_of "$dir" "$from")" -U postgres >"$dir/$n/basebackup.log" 2>&1 \
        || { cat "$dir/$n/basebackup.log" >&2; exit 1; }
    as_owner sh -c "touch '$dir/$n/data/standby.signal' && \
        printf \"primary_conninfo = '%s'\n\" '$(conninfo "$dir" "$from" "$n")' >> '$dir/$n/data/postgresql.auto.conf'"
    start_node "$dir" "$n"
}

roles() { cat "$1/roles"; }
sync_names() {
    local dir="$1" candidates="$2"
    if [ "$(cat "$dir/mode")" = async ]; then echo ""; else echo "FIRST 1 ($candidates)"; fi
}

cmd_start() {
    local watch="" mode=sync
    while [ $# -gt 0 ]; do
        case "$1" in
            --watch) watch="${2:?--watch needs a pid}"; shift 2 ;;
            --async) mode=async; shift ;;
            *) echo "pg-cluster.sh start: unknown option $1" >&2; exit 2 ;;
        esac
    done
    install_deps
    local dir pw n
    dir="$(mktemp -d /tmp/dhp-pgc.XXXXXX)"
    # private: the socket (trust auth for local connections), the pwfile and
    # the data are reachable by the owner (and root) only, never by another local user
    chmod 700 "$dir"
    pw="dhp-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
    (umask 077 && printf '%s\n' "$pw" >"$dir/pwfile")
    chmod 600 "$dir/pwfile"
    echo "$mode" >"$dir/mode"
    for n in n0 n1 n2; do mkdir -p "$dir/$n"; free_port >"$dir/$n/port"; done
    if [ "$(id -u)" -eq 0 ]; then chown -R postgres: "$dir"; fi
    as_owner "$PGBIN/initdb" -D "$dir/n0/data" -U postgres --pwfile="$dir/pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    start_node "$dir" n0
    as_owner "$PGBIN/createdb" -h "$dir/n0" -p "$(port_of "$dir" n0)" -U postgres dhp >&2
    make_standby "$dir" n1 n0
    make_standby "$dir" n2 n0
    echo "n0 n1 n2" >"$dir/roles"
    # only n1 is synchronous (FIRST 1 (n1)): n2 stays asynchronous
    q "$dir" n0 "ALTER SYSTEM SET synchronous_standby_names = '$(sync_names "$dir" n1)'" >/dev/null
    q "$dir" n0 "SELECT pg_reload_conf()" >/dev/null
    wait_streaming "$dir" n0 2
    if [ -n "$watch" ]; then
        setsid nohup bash "$0" _watch "$watch" "$dir" >/dev/null 2>&1 </dev/null &
    fi
    local hosts=""
    for n in n0 n1 n2; do hosts="$hosts${hosts:+,}127.0.0.1:$(port_of "$dir" "$n")"; done
    echo "$dir postgres://postgres:$pw@$hosts/dhp?target_session_attrs=read-write"
}

# Wait (30 s at most) until primary P has N streaming standbys.
wait_streaming() {
    local dir="$1" p="$2" want="$3" got
    for _ in $(seq 1 300); do
        got="$(q "$dir" "$p" "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" 2>/dev/null || echo 0)"
        if [ "$got" -ge "$want" ]; then return 0; fi
        sleep 0.1
    done
    echo "pg-cluster.sh: $p has $got streaming standbys after 30 s, wanted $want" >&2
    exit 1
}

cmd_detach() {
    local dir="${1:?usage: pg-cluster.sh detach DIR}" p s a
    find_pgbin
    read -r p s a <"$dir/roles"
    q "$dir" "$s" "ALTER SYSTEM SET primary_conninfo = ''" >/dev/null
    q "$dir" "$s" "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 1 100); do
        if [ "$(q "$dir" "$s" "SELECT count(*) FROM pg_stat_wal_receiver")" = 0 ]; then
            echo "detached $s"
            return 0
        fi
        sleep 0.05
    done
    echo "pg-cluster.sh: $s still receives WAL 5 s after primary_conninfo=''" >&2
    exit 1
}

cmd_crash() {
    local dir="${1:?usage: pg-cluster.sh crash DIR}" p s a
    find_pgbin
    read -r p s a <"$dir/roles"
    # the old primary dies and stays down (fenced): never a primary again
    as_owner "$PGBIN/pg_ctl" -D "$dir/$p/data" -m immediate -w stop >&2
    echo "$p" >"$dir/fenced"
    echo "crashed $p"
}

# A planned switchover's first half: a clean shutdown of the primary (`-m fast`: the
# walsenders send every WAL record, the shutdown checkpoint included, to the
# connected standbys before the server exits); fenced like a crashed one.
cmd_stop_primary() {
    local dir="${1:?usage: pg-cluster.sh stop-primary DIR}" p s a
    find_pgbin
    read -r p s a <"$dir/roles"
    as_owner "$PGBIN/pg_ctl" -D "$dir/$p/data" -m fast -w -t 60 stop >&2
    echo "$p" >"$dir/fenced"
    echo "stopped $p"
}

cmd_promote() {
    local dir="${1:?usage: pg-cluster.sh promote DIR}" p s a lsn
    find_pgbin
    read -r p s a <"$dir/roles"
    if [ ! -f "$dir/fenced" ] || [ "$(cat "$dir/fenced")" != "$p" ]; then
        echo "pg-cluster.sh: promote refused: the primary $p is not fenced (crash it first)" >&2
        exit 1
    fi
    as_owner "$PGBIN/pg_ctl" -D "$dir/$s/data" -w -t 60 promote >&2
    DB=postgres q "$dir" "$s" "ALTER SYSTEM RESET primary_conninfo" >/dev/null
    # Synchronous again once the next in line ($a, rebuilt first) streams; commits wait until
    # then. ONE name only: with `FIRST 1 ($a, $p)` a commit acknowledged by $p alone (while $a
    # lags) would be lost when $a is promoted next (a failover manager must promote the standby
    # that acknowledged; the roles file is this harness's record of which one that is).
    DB=postgres q "$dir" "$s" "ALTER SYSTEM SET synchronous_standby_names = '$(sync_names "$dir" "$a")'" >/dev/null
    DB=postgres q "$dir" "$s" "SELECT pg_reload_conf()" >/dev/null
    lsn="$(DB=postgres q "$dir" "$s" "SELECT pg_current_wal_lsn()")"
    echo "$s $a $p" >"$dir/roles"
    echo "promoted $s $lsn"
}

cmd_rejoin() {
    local dir="${1:?usage: pg-cluster.sh rejoin DIR}" p s a
    find_pgbin
    read -r p s a <"$dir/roles"
    for n in "$s" "$a"; do
        if [ -f "$dir/$n/data/postmaster.pid" ]; then
            as_owner "$PGBIN/pg_ctl" -D "$dir/$n/data" -m immediate -w stop >/dev/null 2>&1 || true
        fi
        make_standby "$dir" "$n" "$p"
    done
    rm -f "$dir/fenced"
    wait_streaming "$dir" "$p" 2
    echo "rejoined $s $a"
}

cmd_stop() {
    local dir="${1:?usage: pg-cluster.sh stop DIR}" n
    find_pgbin || true
    for n in n0 n1 n2; do
        if [ -f "$dir/$n/data/postmaster.pid" ]; then
            as_owner "$PGBIN/pg_ctl" -D "$dir/$n/data" -m immediate -w stop >/dev/null 2>&1 || true
        fi
    done
    case "$dir" in /tmp/dhp-pgc.*) rm -rf "$dir" ;; esac
}

cmd_watch() {
    local pid="$1" dir="$2"
    while kill -0 "$pid" 2>/dev/null; do sleep 1; done
    cmd_stop "$dir"
}

case "${1:-}" in
    start) shift; cmd_start "$@" ;;
    roles) shift; roles "$@" ;;
    detach) shift; cmd_detach "$@" ;;
    crash) shift; cmd_crash "$@" ;;
    stop-primary) shift; cmd_stop_primary "$@" ;;
    promote) shift; cmd_promote "$@" ;;
    rejoin) shift; cmd_rejoin "$@" ;;
    stop) shift; cmd_stop "$@" ;;
    _watch) shift; cmd_watch "$@" ;;
    *) echo "usage: pg-cluster.sh start [--async] [--watch PID] | roles|detach|crash|stop-primary|promote|rejoin|stop DIR" >&2; exit 2 ;;
esac
