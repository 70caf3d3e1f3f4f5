#!/usr/bin/env bash
# A throwaway REPLICATED PostgreSQL cluster under a real failover manager,
# pg_auto_failover (Debian's postgresql-15-auto-failover), the layout
# dhp-chaos's rounds set up with src/db/auto.rs (this script is for tests,
# benches and people): a monitor and three data nodes, EACH IN ITS OWN NETWORK NAMESPACE
# on a bridge (monitor 10.78.K.2, nodes 10.78.K.3-5, a port each; the root namespace,
# where the clients run, is 10.78.K.1). Quorum-synchronous replication:
# `synchronous_standby_names = 'ANY 1 (…)'`, set and kept by the monitor.
# The monitor detects a dead primary and promotes the most advanced standby;
# the harness never promotes.
#
#   scripts/pg-auto.sh start [--watch PID]
#        LAST line of output: `DIR URL`, URL a multi-host
#        postgres://postgres:PW@10.78.K.3:P0,…/dhp?target_session_attrs=read-write
#   scripts/pg-auto.sh state DIR            the monitor's view, a line per node:
#                                           `NAME REPORTED GOAL` (exit 1 when unreachable)
#   scripts/pg-auto.sh kill-host DIR NODE   SIGKILL every process in NODE's namespace (the
#                                           keeper and its PostgreSQL): the host died
#   scripts/pg-auto.sh start-host DIR NODE  start NODE's keeper again (it rejoins, pg_rewind)
#   scripts/pg-auto.sh partition DIR NODE [monitor]
#                                           drop every packet on NODE's link (from the
#                                           standbys, the monitor and the clients); with
#                                           `monitor`, only those to and from the monitor
#   scripts/pg-auto.sh heal DIR NODE        remove NODE's partition rules
#   scripts/pg-auto.sh switchover DIR       `pg_autoctl perform switchover` (planned)
#   scripts/pg-auto.sh stop DIR             kill everything, remove namespaces and DIR
#
# Failover timing is tuned down from the defaults (20-30 s) so a chaos round
# sees several: the monitor health-checks every second, a node is unhealthy
# after 3 s, a primary that is not heard from is given 5 s to demote itself
# before a standby is promoted, and a keeper cut off from the monitor and
# from every standby demotes its primary after 3 s (below the 5 s: the old
# primary is read-only before the new one takes writes).
#
# Authentication (issue 47: private to its owner, like pg.sh and
# pg-cluster.sh): the client role `postgres` uses SCRAM with a random
# password (the URL carries it; DIR/pwfile is root's, 0600, in a 0700 DIR).
# pg_auto_failover's own roles (autoctl_node, pgautofailover_monitor and
# pgautofailover_replicator, a SUPERUSER: pg_rewind needs one) are trusted
# only from the four namespaces' addresses (K.2-K.5), never from K.1, the
# root namespace where every local user's processes run. Every server's
# Unix socket is in DIR/NODE/sock (0700, postgres), not the shared
# /var/run/postgresql, so its `local trust` line is the owner's alone.
# An interrupted start (Ctrl-C, SIGTERM) removes every process, namespace
# and link it made. Throwaway test clusters.
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

need_root() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "pg-auto.sh: needs root (network namespaces, veth pairs, iptables); pg_auto_failover itself runs as postgres" >&2
        exit 1
    fi
}

# Installs happen in scripts/services.sh (CI's scripts/test.sh runs it),
# never here, nor from dhp-chaos (whose src/db/ sets up the same layout).
need_tools() {
    need_root
    local missing=""
    find_pgbin || missing="$missing postgresql"
    command -v pg_autoctl >/dev/null 2>&1 || missing="$missing pg_autoctl(postgresql-NN-auto-failover)"
    command -v iptables >/dev/null 2>&1 || missing="$missing iptables"
    command -v ip >/dev/null 2>&1 || missing="$missing ip(iproute2)"
    if [ -n "$missing" ]; then
        echo "pg-auto.sh: missing$missing: run scripts/services.sh as root (it installs them)" >&2
        exit 1
    fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# Each server its own port and its own socket directory (NODE/sock, 0700).
port_of() { cat "$1/$2/port"; }
sub() { cat "$1/subnet"; }
ns_of() { echo "dhpauto-$(cat "$1/tag")-$2"; }
ip_of() {
    case "$2" in
        mon) echo "$(sub "$1").2" ;;
        n0) echo "$(sub "$1").3" ;;
        n1) echo "$(sub "$1").4" ;;
        n2) echo "$(sub "$1").5" ;;
        *) echo "pg-auto.sh: no node $2" >&2; exit 2 ;;
    esac
}

# Run as postgres inside NODE's namespace, pg_autoctl's config under DIR.
in_node() {
    local dir="$1" n="$2"
    shift 2
    ip netns exec "$(ns_of "$dir" "$n")" runuser -u postgres -- env \
        PATH="$PGBIN:/usr/bin:/bin" PG_CONFIG="$PGBIN/pg_config" \
        XDG_CONFIG_HOME="$dir/$n/cfg" XDG_DATA_HOME="$dir/$n/share" XDG_RUNTIME_DIR="$dir/$n/run" \
        PGHOST="$dir/$n/sock" PG_REGRESS_SOCK_DIR="$dir/$n/sock" "$@"
}

mon_uri() { echo "postgres://autoctl_node@$(ip_of "$1" mon):$(port_of "$1" mon)/pg_auto_failover?sslmode=disable"; }

# A free /24 under 10.78 (one per cluster: several may run at once).
pick_subnet() {
    local k addrs
    # read whole first: `ip … | grep -q` under pipefail fails whenever grep
    # stops reading before ip has written everything (SIGPIPE), which with
    # many interfaces took a subnet already in use
    addrs="$(ip -o addr show)"
    for k in $(seq 1 250); do
        case "$addrs" in
            *" 10.78.$k.1/"*) ;;
            *) echo "10.78.$k"; return 0 ;;
        esac
    done
    echo "pg-auto.sh: no free 10.78.K.0/24 subnet" >&2
    exit 1
}

add_ns() {
    local dir="$1" n="$2" ns veth tag
    ns="$(ns_of "$dir" "$n")"
    tag="$(cat "$dir/tag")"
    veth="da${tag}${n}"
    ip netns add "$ns"
    ip link add "$veth" type veth peer name "dp${tag}${n}"
    ip link set "dp${tag}${n}" netns "$ns"
    ip netns exec "$ns" ip link set "dp${tag}${n}" name eth0
    ip netns exec "$ns" ip addr add "$(ip_of "$dir" "$n")/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    ip netns exec "$ns" ip link set lo up
    ip link set "$veth" master "da${tag}br"
    ip link set "$veth" up
}

# `local` is trusted: the socket is in NODE/sock (0700, postgres). The
# manager's roles from the namespaces (K.2-K.5) only; K.1, the root
# namespace, gets in as `postgres` with the password or not at all.
hba() {
    local s="$1" h
    echo "local all all trust"
    for h in 2 3 4 5; do
        echo "host pg_auto_failover autoctl_node $s.$h/32 trust"
        echo "host all pgautofailover_monitor $s.$h/32 trust"
        echo "host replication pgautofailover_replicator $s.$h/32 trust"
        echo "host all pgautofailover_replicator $s.$h/32 trust"
    done
    echo "host all postgres $s.0/24 scram-sha-256"
}

# Start NODE's keeper (`pg_autoctl run`) in the background, logging to NODE/keeper.log.
run_keeper() {
    local dir="$1" n="$2" d
    d="$dir/$n/data"
    [ "$n" = mon ] && d="$dir/mon/data"
    ip netns exec "$(ns_of "$dir" "$n")" setsid runuser -u postgres -- env \
        PATH="$PGBIN:/usr/bin:/bin" PG_CONFIG="$PGBIN/pg_config" \
        XDG_CONFIG_HOME="$dir/$n/cfg" XDG_DATA_HOME="$dir/$n/share" XDG_RUNTIME_DIR="$dir/$n/run" \
        PGHOST="$dir/$n/sock" PG_REGRESS_SOCK_DIR="$dir/$n/sock" pg_autoctl run --pgdata "$d" >>"$dir/$n/keeper.log" 2>&1 </dev/null &
}

# The monitor's `NAME REPORTED GOAL` lines, asked through its private
# socket (autoctl_node is not let in from the root namespace).
cmd_state() {
    local dir="${1:?usage: pg-auto.sh state DIR}"
    find_pgbin
    in_node "$dir" mon timeout 5 psql -X -q -A -t -F ' ' -v ON_ERROR_STOP=1 -p "$(port_of "$dir" mon)" \
        -U autoctl_node -d pg_auto_failover \
        -c "SELECT nodename, reportedstate, goalstate FROM pgautofailover.node ORDER BY nodeid"
}

# Wait (SECS at most) until the formation is whole: one primary, every
# other node secondary, reported = goal.
wait_whole() {
    local dir="$1" secs="$2" s
    for _ in $(seq 1 $((secs * 5))); do
        s="$(cmd_state "$dir" 2>/dev/null || true)"
        if [ "$(echo "$s" | awk '$2==$3 && ($2=="primary"){p++} $2==$3 && $2=="secondary"{q++} END{print p+0, q+0}')" = "1 2" ]; then
            return 0
        fi
        sleep 0.2
    done
    echo "pg-auto.sh: the formation is not whole after $secs s:" >&2
    echo "$s" >&2
    return 1
}

cmd_start() {
    local watch=""
    while [ $# -gt 0 ]; do
        case "$1" in
            --watch) watch="${2:?--watch needs a pid}"; shift 2 ;;
            *) echo "pg-auto.sh start: unknown option $1" >&2; exit 2 ;;
        esac
    done
    need_tools
    local dir pw n s tag st
    dir="$(mktemp -d /tmp/dhp-pga.XXXXXX)"
    chmod 700 "$dir"
    # the caller may need DIR to clean up after killing this script outright (SIGKILL)
    echo "pg-auto.sh: cluster directory $dir" >&2
    pw="dhp-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
    printf '%s\n' "$pw" >"$dir/pwfile"
    chmod 600 "$dir/pwfile"
    echo auto >"$dir/manager"
    # the tag names this cluster's namespaces and links (interface names: 15 bytes at most)
    tag="$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
    echo "$tag" >"$dir/tag"
    local watcher=""
    if [ -n "$watch" ]; then
        setsid nohup bash "$0" _watch "$watch" "$dir" >/dev/null 2>&1 </dev/null &
        watcher=$!
    fi
    # Ctrl-C, SIGTERM or a failed step before the cluster is handed over:
    # undo everything made so far (the keepers run under setsid, no signal
    # reaches them)
    # shellcheck disable=SC2064
    trap "start_undo '$dir' '$watcher'" EXIT
    trap "exit 130" INT TERM HUP
    exec 8>/tmp/dhp-pga-net.lock
    flock 8
    s="$(pick_subnet)"
    echo "$s" >"$dir/subnet"
    ip link add "da${tag}br" type bridge
    ip addr add "$s.1/24" dev "da${tag}br"
    ip link set "da${tag}br" up
    exec 8>&-
    for n in mon n0 n1 n2; do
        mkdir -p "$dir/$n/cfg" "$dir/$n/share" "$dir/$n/run" "$dir/$n/sock"
        free_port >"$dir/$n/port"
        ip_of "$dir" "$n" >"$dir/$n/host"
        add_ns "$dir" "$n"
    done
    chown -R postgres: "$dir"
    chown root: "$dir/pwfile"
    chmod 700 "$dir"/*/sock
    in_node "$dir" mon pg_autoctl create monitor --pgdata "$dir/mon/data" --pgport "$(port_of "$dir" mon)" \
        --hostname "$(ip_of "$dir" mon)" --no-ssl --skip-pg-hba >"$dir/mon/create.log" 2>&1 \
        || { cat "$dir/mon/create.log" >&2; exit 1; }
    hba "$s" | runuser -u postgres -- tee "$dir/mon/data/pg_hba.conf" >/dev/null
    cat >>"$dir/mon/data/postgresql.auto.conf" <<EOF
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 3000
pgautofailover.primary_demote_timeout = 5000
pgautofailover.startup_grace_period = 2000
EOF
    run_keeper "$dir" mon
    for _ in $(seq 1 150); do
        cmd_state "$dir" >/dev/null 2>&1 && break
        sleep 0.2
    done
    for n in n0 n1 n2; do
        in_node "$dir" "$n" pg_autoctl create postgres --pgdata "$dir/$n/data" --pgport "$(port_of "$dir" "$n")" \
            --hostname "$(ip_of "$dir" "$n")" --pghost "$dir/$n/sock" --name "$n" --dbname dhp --no-ssl --skip-pg-hba \
            --monitor "$(mon_uri "$dir")" >"$dir/$n/create.log" 2>&1 \
            || { cat "$dir/$n/create.log" >&2; exit 1; }
        in_node "$dir" "$n" pg_autoctl config set --pgdata "$dir/$n/data" timeout.network_partition_timeout 3 \
            >>"$dir/$n/create.log" 2>&1
        if [ "$n" = n0 ]; then
            hba "$s" | runuser -u postgres -- tee "$dir/n0/data/pg_hba.conf" >/dev/null
        fi
        run_keeper "$dir" "$n"
        # one node at a time: the first becomes the primary, the others its standbys
        for _ in $(seq 1 300); do
            st="$(cmd_state "$dir" 2>/dev/null || true)"
            grep -Eq "^$n (single|primary|secondary) (single|primary|secondary)$" <<<"$st" && break
            sleep 0.2
        done
    done
    wait_whole "$dir" 60
    # on stdin, not in psql's argv (world-readable in /proc while it runs)
    printf "ALTER ROLE postgres PASSWORD '%s';\n" "$pw" \
        | in_node "$dir" n0 psql -X -q -At -v ON_ERROR_STOP=1 -p "$(port_of "$dir" n0)" -U postgres -d dhp -f - >/dev/null
    # the password must work over TCP, or the clients cannot connect (a
    # failure here still removes the cluster: the EXIT trap is still set)
    PGPASSWORD="$pw" "$PGBIN/psql" -X -q -At "postgres://postgres@$(ip_of "$dir" n0):$(port_of "$dir" n0)/dhp?connect_timeout=3" \
        -c "SELECT 1" >/dev/null || { echo "pg-auto.sh: the client role cannot log in over TCP" >&2; exit 1; }
    trap - EXIT INT TERM HUP
    local hosts=""
    for n in n0 n1 n2; do hosts="$hosts${hosts:+,}$(ip_of "$dir" "$n"):$(port_of "$dir" "$n")"; done
    echo "$dir postgres://postgres:$pw@$hosts/dhp?target_session_attrs=read-write"
}

cmd_kill_host() {
    local dir="${1:?usage: pg-auto.sh kill-host DIR NODE}" n="${2:?NODE}" ns pids
    ns="$(ns_of "$dir" "$n")"
    pids="$(ip netns pids "$ns" | tr '\n' ' ')"
    if [ -n "$pids" ]; then
        # shellcheck disable=SC2086  # one word per pid
        kill -9 $pids 2>/dev/null || true
    fi
    echo "$pids" >"$dir/$n/killed"
    echo "killed $n ($pids)"
}

cmd_start_host() {
    local dir="${1:?usage: pg-auto.sh start-host DIR NODE}" n="${2:?NODE}" ns
    find_pgbin
    ns="$(ns_of "$dir" "$n")"
    for _ in $(seq 1 50); do [ -z "$(ip netns pids "$ns")" ] && break; sleep 0.1; done
    # the killed processes gone from /proc, not only from the namespace: a
    # zombie not yet reaped by init passes kill(pid, 0), and pg_autoctl and
    # the postmaster would take their old pidfiles for a live instance
    local p left killed
    for _ in $(seq 1 100); do
        left=""
        read -ra killed <"$dir/$n/killed" 2>/dev/null || killed=()
        for p in "${killed[@]}"; do [ -e "/proc/$p" ] && left="$left $p"; done
        [ -z "$left" ] && break
        sleep 0.1
    done
    if [ -n "$left" ]; then
        echo "pg-auto.sh start-host: killed processes of $n still in /proc after 10 s:$left" >&2
        exit 1
    fi
    # every process of the host was killed: its pidfiles are stale
    find "$dir/$n/run" -name pg_autoctl.pid -delete 2>/dev/null || true
    rm -f "$dir/$n/killed"
    run_keeper "$dir" "$n"
    echo "started $n"
}

cmd_partition() {
    local dir="${1:?usage: pg-auto.sh partition DIR NODE [monitor]}" n="${2:?NODE}" what="${3:-all}" ns m
    ns="$(ns_of "$dir" "$n")"
    m="$(ip_of "$dir" mon)"
    case "$what" in
        all)
            ip netns exec "$ns" iptables -w -A INPUT -i eth0 -j DROP
            ip netns exec "$ns" iptables -w -A OUTPUT -o eth0 -j DROP ;;
        monitor)
            ip netns exec "$ns" iptables -w -A INPUT -i eth0 -s "$m" -j DROP
            ip netns exec "$ns" iptables -w -A OUTPUT -o eth0 -d "$m" -j DROP ;;
        *) echo "pg-auto.sh partition: all or monitor, not $what" >&2; exit 2 ;;
    esac
    echo "partitioned $n from $what"
}

cmd_heal() {
    local dir="${1:?usage: pg-auto.sh heal DIR NODE}" n="${2:?NODE}"
    ip netns exec "$(ns_of "$dir" "$n")" iptables -w -F
    echo "healed $n"
}

cmd_switchover() {
    local dir="${1:?usage: pg-auto.sh switchover DIR}"
    find_pgbin
    in_node "$dir" mon pg_autoctl perform switchover --pgdata "$dir/mon/data" --wait 60 >&2
    echo "switched over"
}

cmd_stop() {
    local dir="${1:?usage: pg-auto.sh stop DIR}" n ns tag pids all="" p
    [ -f "$dir/tag" ] || return 0
    tag="$(cat "$dir/tag")"
    for n in n0 n1 n2 mon; do
        ns="dhpauto-$tag-$n"
        pids="$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
        if [ -n "$pids" ]; then
            # shellcheck disable=SC2086  # one word per pid
            kill -9 $pids 2>/dev/null || true
        fi
        all="$all $pids"
    done
    # gone from /proc (reaped), or a namespace may still be held
    for _ in $(seq 1 50); do
        p=""
        for n in $all; do [ -e "/proc/$n" ] && p=1; done
        [ -z "$p" ] && break
        sleep 0.1
    done
    for n in n0 n1 n2 mon; do
        ip link del "da${tag}${n}" 2>/dev/null || true
        ip netns del "dhpauto-$tag-$n" 2>/dev/null || true
    done
    ip link del "da${tag}br" 2>/dev/null || true
    case "$dir" in /tmp/dhp-pga.*) rm -rf "$dir" ;; esac
}

# The EXIT trap of a start that did not finish (interrupted or failed):
# end the watcher, stop what exists.
start_undo() {
    local rc=$? dir="$1" watcher="$2"
    trap - EXIT INT TERM HUP
    [ "$rc" -eq 0 ] && return 0
    echo "pg-auto.sh: start did not finish (exit $rc); removing $dir, its namespaces and links" >&2
    if [ -n "$watcher" ]; then kill "$watcher" 2>/dev/null || true; fi
    # a create still running in a namespace holds it: stop kills every pid in each
    cmd_stop "$dir"
}

cmd_watch() {
    local pid="$1" dir="$2"
    while kill -0 "$pid" 2>/dev/null; do sleep 1; done
    cmd_stop "$dir"
}

case "${1:-}" in
    start) shift; cmd_start "$@" ;;
    state) shift; cmd_state "$@" ;;
    kill-host) shift; cmd_kill_host "$@" ;;
    start-host) shift; cmd_start_host "$@" ;;
    partition) shift; cmd_partition "$@" ;;
    heal) shift; cmd_heal "$@" ;;
    switchover) shift; cmd_switchover "$@" ;;
    stop) shift; cmd_stop "$@" ;;
    _watch) shift; cmd_watch "$@" ;;
    *) echo "usage: pg-auto.sh start [--watch PID] | state|switchover|stop DIR | kill-host|start-host|heal DIR NODE | partition DIR NODE [monitor]" >&2; exit 2 ;;
esac
