#!/usr/bin/env bash
# Description: redis-server with appendonly yes under daxkit: redis-benchmark load plus a deterministic
# set of writes, then the server is killed (SIGKILL, after the fsync policy had time to act) and restarted
# on the same directory, which reloads the AOF: every acknowledged key must be back, with the same values as
# in the same sequence run through the kernel; redis-check-aof must accept the daxkit-written AOF.
# Servers bind 127.0.0.1 on a private port and are stopped by a trap.
# Usage: redis.sh MEDIUM always|everysec
set -euo pipefail
. "$(dirname "$0")/lib.sh"
dk_need_cmd redis-server redis-cli redis-benchmark redis-check-aof
dk_progs_setup "${1:?medium}"
FSYNC=${2:?appendfsync policy: always|everysec}
KEYS=${KEYS:-2000}

SERVER_PID=
stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -9 "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=
}
dk_on_exit stop_server

# start_server DIR PORT [PREFIX...]: starts redis-server in the background on DIR, waits for PING.
start_server() {
    local dir=$1 port=$2 i
    shift 2
    "$@" redis-server --bind 127.0.0.1 --port "$port" --protected-mode yes --dir "$dir" --appendonly yes \
        --appendfsync "$FSYNC" --save "" --daemonize no --logfile "$dir/redis.log" \
        --auto-aof-rewrite-percentage 0 > "$dir/redis.out" 2>&1 < /dev/null &
    SERVER_PID=$!
    for i in $(seq 1 200); do
        [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ] && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$dir/redis.log" >&2; dk_fail "redis-server exited at start ($dir)"; }
        sleep 0.05
    done
    cat "$dir/redis.log" >&2
    dk_fail "redis-server did not answer PING on port $port"
}

# The deterministic part: KEYS sets, a counter incremented KEYS times, a list, a hash, some deletes.
load_keys() {  # PORT
    awk -v n="$KEYS" 'BEGIN {
        for (i = 1; i <= n; i++) {
            printf "SET dk:key:%d value-%d-%s\n", i, i, substr("abcdefghijklmnopqrstuvwxyz0123456789", 1 + i % 36)
            print "INCR dk:counter"
            if (i % 3 == 0) printf "RPUSH dk:list item-%d\n", i
            if (i % 5 == 0) printf "HSET dk:hash f%d %d\n", i, i * i
            if (i % 97 == 0) printf "DEL dk:key:%d\n", i - 1
        }
    }' | redis-cli -h 127.0.0.1 -p "$1" > /dev/null
}
# What the deterministic part left: sorted keys with values (redis-benchmark's random keys excluded).
snapshot() {  # PORT
    local p=$1
    {
        redis-cli -h 127.0.0.1 -p "$p" --scan --pattern 'dk:key:*' | LC_ALL=C sort > "$DK_MNT/keys.txt"
        cat "$DK_MNT/keys.txt"
        sed 's/^/GET /' "$DK_MNT/keys.txt" | redis-cli -h 127.0.0.1 -p "$p"
        echo "counter $(redis-cli -h 127.0.0.1 -p "$p" get dk:counter)"
        echo "list $(redis-cli -h 127.0.0.1 -p "$p" lrange dk:list 0 -1 | sha256sum | cut -c1-16)"
        echo "hash $(redis-cli -h 127.0.0.1 -p "$p" hgetall dk:hash | sha256sum | cut -c1-16)"
    } | sha256sum | cut -c1-32
}
# One full sequence on DIR; writes "digest-before digest-after keys-before keys-after" to DIR/result.
# Not run in $(...): the server must be a child of this shell so the exit trap can stop it.
sequence() {  # DIR [RUNNER]
    local dir=$1 port before after n
    shift
    port=$(dk_free_port)
    start_server "$dir" "$port" "$@"
    redis-benchmark -h 127.0.0.1 -p "$port" -q -n 3000 -r 500 -c 4 -t set,lpush,incr > "$dir/bench.txt" 2>&1 ||
        { cat "$dir/bench.txt" >&2; dk_fail "redis-benchmark failed ($dir)"; }
    load_keys "$port"
    before=$(snapshot "$port")
    n=$(redis-cli -h 127.0.0.1 -p "$port" dbsize)
    # always: every acknowledged write is in the AOF now. everysec: let the background fsync run.
    [ "$FSYNC" = everysec ] && sleep 2.5
    stop_server  # SIGKILL: no shutdown-time flush helps
    port=$(dk_free_port)
    start_server "$dir" "$port" "$@"
    after=$(snapshot "$port")
    echo "$before $after $n $(redis-cli -h 127.0.0.1 -p "$port" dbsize)" > "$dir/result"
    redis-cli -h 127.0.0.1 -p "$port" shutdown nosave > /dev/null 2>&1 || true
    for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.05; done
    stop_server
}

sequence "$K"
sequence "$D" "${DK_PREFIX[@]}"
read -r kb ka kn1 kn2 < "$K/result"
read -r db da dn1 dn2 < "$D/result"
dk_expect_eq "kernel: reload keeps every key" "$kb $kn1" "$ka $kn2"
dk_expect_eq "daxkit: reload keeps every key" "$db $dn1" "$da $dn2"
dk_expect_eq "content after reload (deterministic keys)" "$ka" "$da"
aof=$(find "$D" -name '*.aof' -size +0 | head -1)
[ -n "$aof" ] || dk_fail "no AOF file under $D"
redis-check-aof "$aof" > "$DK_MNT/check.txt" 2>&1 || { cat "$DK_MNT/check.txt" >&2; dk_fail "redis-check-aof rejects $aof"; }
grep -q "is valid" "$DK_MNT/check.txt" || { cat "$DK_MNT/check.txt" >&2; dk_fail "redis-check-aof did not report $aof valid"; }
echo "ok: redis-check-aof: $(grep 'is valid' "$DK_MNT/check.txt" | head -1)"
echo "PASS"
