#!/usr/bin/env bash
# Description: signal handlers writing to and msyncing files mapped under DAXKIT_ATOMIC_MMAP while their thread
# writes the same file and another thread msyncs (mmap_signal.c; review 11, finding 20: the process hung for
# good, 3 of 3 runs on XFS and tmpfs). mmap_signal.sh KIND [MS]: passes when the program ends within the
# timeout and its checks pass; a hang fails the test (exit 124 of timeout).
set -uo pipefail
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_root
kind=${1:?KIND} ms=${2:-3000}
prog=$(dk_test_bin mmap_signal) || exit 1
cli=$(dk_cli) || exit 1
case $kind in xfs | ext4) dk_media_mount "$kind" 1G ;; *) dk_media_mount "$kind" 256M ;; esac
M=$DK_MNT
head -c 16384 /dev/zero > "$M/a.dat"
head -c 16384 /dev/zero > "$M/b.dat"
timeout -s KILL 240 "$cli" run --dir "$M" --atomic-mmap "$M/*.dat" -- "$prog" "$M/a.dat" "$M/b.dat" "$ms"
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 137 ] && dk_fail "mmap_signal on $kind hung (killed after 240 s)"
[ $rc -eq 0 ] || dk_fail "mmap_signal on $kind exited with $rc"
echo "mmap_signal on $kind: ok"
