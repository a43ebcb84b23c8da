#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Several hosts on one machine, for the multi-node path: each host has its own network, UTS
# (hostname), IPC and mount namespaces, with a private /dev/shm and /tmp, joined to the others
# by a bridge in a namespace of its own (no interface of the machine's changes). Open MPI
# launches across them with this script as its rsh agent, as it launches across a cluster
# with ssh.
#   hosts.sh check                      why hosts cannot be made here (exit 77), or nothing
#   hosts.sh run N PER [--keep DIR]... -- CMD ARGS...
#                                       make N hosts, run mpirun -np N*PER CMD across them
#                                       (PER ranks a host) from host 1, remove the hosts
#   hosts.sh shell N PER [--keep DIR]... -- CMD ARGS...
#                                       the same, but run CMD itself on host 1, with
#                                       $HOSTS_MPIRUN: mpirun across the hosts (give it -n)
#   hosts.sh up DIR N [KEEP...] / down DIR / agent DIR HOST CMD...
# KEEP: folders that stay visible inside the hosts' private /tmp (the build, a venv); the
# current directory is kept. Removal is trapped: a run killed by a signal leaves nothing, and
# `down` clears what a killed run (SIGKILL) left. Exit 77 (SKIP) with the reason where hosts
# cannot be made: not root, or no unshare, nsenter or ip.
set -euo pipefail
me=$(readlink -f "$0")
SUBNET=10.99.0

check() {
    local why=""
    [ "$(id -u)" = 0 ] || why="needs root (network namespaces)"
    for t in unshare nsenter ip mount; do
        command -v $t >/dev/null || why="${why:+$why; }no $t"
    done
    if [ -z "$why" ] && ! unshare --net --uts --ipc --mount true 2>/dev/null; then
        why="unshare of net, uts, ipc and mount namespaces is refused here"
    fi
    [ -z "$why" ] || { echo "hosts: $why" >&2; return 77; }
}

tag_of() { cat "$1/tag"; }

up() {
    local dir=$1 n=$2; shift 2
    mkdir -p "$dir"
    # a tag no other run's namespaces hold (two runs on one machine, as two CIs beside each
    # other): taken by creating its switch, which fails where the name exists
    local tag="" try
    for try in $(seq 1 50); do
        tag="sa$((RANDOM % 90000 + 10000))"
        ip netns add "${tag}sw" 2>/dev/null && break
        tag=""
    done
    [ -n "$tag" ] || { echo "hosts: no free namespace name after 50 tries" >&2; return 1; }
    echo "$tag" >"$dir/tag"
    ip -n "${tag}sw" link add br0 type bridge
    ip -n "${tag}sw" link set br0 up
    {
        echo "127.0.0.1 localhost"
        for i in $(seq 1 "$n"); do echo "$SUBNET.$i h$i"; done
    } >"$dir/hosts"
    local keep=("$PWD" "$@")
    for i in $(seq 1 "$n"); do
        local h=$dir/h$i
        mkdir -p "$h"
        ip netns add "${tag}h$i"
        ip link add "${tag}h${i}a" type veth peer name "${tag}h${i}b"
        ip link set "${tag}h${i}a" netns "${tag}h$i"
        ip link set "${tag}h${i}b" netns "${tag}sw"
        ip -n "${tag}sw" link set "${tag}h${i}b" master br0 up
        ip -n "${tag}h$i" link set "${tag}h${i}a" name eth0
        ip -n "${tag}h$i" addr add "$SUBNET.$i/24" dev eth0
        ip -n "${tag}h$i" link set eth0 up
        ip -n "${tag}h$i" link set lo up
        # A process that holds the host's namespaces (its pid names them to nsenter): its own
        # hostname, /etc/hosts, /dev/shm and /tmp (the kept folders bound back in).
        ip netns exec "${tag}h$i" unshare --uts --ipc --mount --propagation private --fork \
            bash -c '
                h=$1 dir=$2 i=$3; shift 3
                hostname "h$i"
                mount --bind "$dir/hosts" /etc/hosts
                mount -t tmpfs -o mode=1777 tmpfs /dev/shm
                mkdir -p "$h/keep"
                mount -t tmpfs tmpfs "$h/keep"
                k=0
                for d in "$@"; do
                    mkdir -p "$h/keep/$k"; mount --bind "$d" "$h/keep/$k"
                    k=$((k + 1))
                done
                mount -t tmpfs -o mode=1777 tmpfs /tmp
                k=0
                for d in "$@"; do
                    mkdir -p "$d"; mount --bind "$h/keep/$k" "$d"; k=$((k + 1))
                done
                echo $$ >"$h/pid.tmp" && mv "$h/pid.tmp" "$h/pid"
                exec sleep infinity' _ "$h" "$dir" "$i" "${keep[@]}" </dev/null >/dev/null 2>&1 &
    done
    for i in $(seq 1 "$n"); do
        local t=0
        until [ -f "$dir/h$i/pid" ]; do
            sleep 0.05
            t=$((t + 1))
            [ $t -lt 600 ] || { echo "hosts: host h$i did not come up" >&2; return 1; }
        done
    done
}

down() {
    local dir=$1 tag
    [ -f "$dir/tag" ] || return 0
    tag=$(tag_of "$dir")
    for h in "$dir"/h*; do
        [ -f "$h/pid" ] && kill -9 "$(cat "$h/pid")" 2>/dev/null || true
        ip netns del "${tag}$(basename "$h")" 2>/dev/null || true
    done
    ip netns del "${tag}sw" 2>/dev/null || true
    rm -rf "$dir"
}

agent() { # Open MPI's rsh agent: agent DIR HOST CMD (one string, as ssh runs it)
    local dir=$1 host=$2; shift 2
    exec nsenter -t "$(cat "$dir/$host/pid")" --net --uts --ipc --mount -- /bin/sh -c "$*"
}

run() { # run or shell (HOSTS_SHELL=1)
    local n=$1 per=$2; shift 2
    local keep=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        [ "$1" = --keep ] && { keep+=("$2"); shift 2; continue; }
        echo "hosts.sh run: unknown option $1" >&2; return 2
    done
    shift
    check || return $?
    HOSTS_DIR=$(mktemp -d /run/symaddr-hosts.XXXXXX)
    local dir=$HOSTS_DIR
    trap 'down "$HOSTS_DIR"' EXIT
    trap 'exit 130' INT TERM HUP
    up "$dir" "$n" "${keep[@]}"
    local hostlist="" i
    for i in $(seq 1 "$n"); do hostlist+="${hostlist:+,}h$i:$per"; done
    printf '#!/bin/sh\nexec %s agent %s "$@"\n' "$me" "$dir" >"$dir/rsh"
    {
        echo '#!/bin/sh'
        echo "exec mpirun --allow-run-as-root --host $hostlist --mca plm_rsh_agent $dir/rsh" \
            "--mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include eth0" \
            "--mca btl_tcp_if_include eth0 --mca btl self,vader,tcp" \
            "--mca mpi_add_procs_cutoff 0 \"\$@\""
    } >"$dir/mpirun"
    chmod +x "$dir/rsh" "$dir/mpirun"
    local st=0
    if [ "${HOSTS_SHELL:-0}" = 1 ]; then
        nsenter -t "$(cat "$dir/h1/pid")" --net --uts --ipc --mount --wd="$PWD" -- \
            env HOSTS_MPIRUN="$dir/mpirun" "$@" || st=$?
    else
        nsenter -t "$(cat "$dir/h1/pid")" --net --uts --ipc --mount --wd="$PWD" -- \
            "$dir/mpirun" -np $((n * per)) --oversubscribe "$@" || st=$?
    fi
    return $st
}

cmd=${1:-}
shift || true
case $cmd in
check) check ;;
up) up "$@" ;;
down) down "$@" ;;
agent) agent "$@" ;;
run) run "$@" ;;
shell) HOSTS_SHELL=1 run "$@" ;;
*) sed -n '2,20p' "$me" >&2; exit 2 ;;
esac
