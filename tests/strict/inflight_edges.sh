#!/usr/bin/env bash
# Description: the in-flight registry's edges (review 14, findings 5 and 10). (1) A signal handler's lock call
# interrupting its thread's own lock call, which was attaching the registry (a root without an area): ends
# (before: a hang on the registry's mutex). (2) The registry created on a full medium: the program's flock
# returns (before: SIGBUS, the registry's sparse pages stored into through its mapping). Needs root for (2) (a
# 4 MiB tmpfs). Usage: inflight_edges.sh BUILD
set -u
B=$(cd "${1:?build dir}" && pwd)
T=$(mktemp -d /dev/shm/dk-inflight-edges.XXXXXX)
M=""
cleanup() { [ -n "$M" ] && umount "$M" 2>/dev/null && rmdir "$M"; rm -rf "$T"; }
trap cleanup EXIT
fail=0
# python3's interpreter itself under the library, not a pyenv shim (tests/harness/media.sh dk_python)
py=$(python3 -c 'import sys; print(sys.executable)') || { echo "SKIP: python3 not found"; exit 77; }
mkdir -p "$T/root" "$T/locks"
timeout 60 env LD_PRELOAD="$B/lib/libdaxkit.so" DAXKIT_DIR="$T/root" DAXKIT_MODE=strict \
    "$B/tests/inflight_handler_lock" "$T/locks" 5
rc=$?
if [ $rc = 0 ]; then echo "ok: handler lock calls during the main loop's registry attach"; else
    echo "FAIL: handler lock loop exit $rc (124: a hang -- the handler waited for its own thread)"; fail=1; fi

if [ "$(id -u)" != 0 ]; then echo "skip: full-medium case needs root (mount)"; exit $((fail ? 1 : 77)); fi
M=$(mktemp -d /tmp/dk-inflight-full.XXXXXX)
mount -t tmpfs -o size=4m tmpfs "$M" || { echo "FAIL: mount tmpfs"; exit 1; }
mkdir -p "$M/root/.daxkit" && chmod 700 "$M/root/.daxkit"
head -c 6000 /dev/urandom > "$M/root/a"
dd if=/dev/zero of="$M/fill" bs=4k 2>/dev/null
env LD_PRELOAD="$B/lib/libdaxkit.so" DAXKIT_DIR="$M/root" DAXKIT_MODE=strict "$py" -c '
import fcntl, os, sys
fd = os.open(sys.argv[1] + "/a", os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_SH)
sys.exit(0 if len(os.read(fd, 100)) == 100 else 3)' "$M/root"
rc=$?
if [ $rc = 0 ]; then echo "ok: a strict reader's flock on a full medium returns (no registry made)"; else
    echo "FAIL: strict reader's flock on a full medium: exit $rc (135: SIGBUS storing into the sparse registry)"; fail=1; fi
[ $fail = 0 ] && echo PASS
exit $fail
