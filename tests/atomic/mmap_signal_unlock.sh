#!/usr/bin/env bash
# Description: a signal handler's write of a DAXKIT_ATOMIC_MMAP file inside its thread's own read unlock of the
# shadow's write lock, handed by glibc to a waiting msync (review 12, finding 13: hung for good, 1 of 20 runs of
# review 11's reproducer). mmap_signal_unlock.c holds glibc's window open; the shadow (XFS, ext4) only.
# WINDOW take: the thread's own try of that lock instead, had by glibc before the thread marked it held, while
# an msync waits for it (session 25: the CI of 978b31a hung there once, 240 s).
# mmap_signal_unlock.sh KIND [unlock|take]: passes when the program ends and its checks pass. The program's
# watchdog fails it with a message (each thread's state) when its main thread makes no progress for 20 s;
# the 240 s kill is the last resort.
set -uo pipefail
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_root
kind=${1:?KIND}
window=${2:-unlock}
prog=$(dk_test_bin mmap_signal_unlock) || exit 1
cli=$(dk_cli) || exit 1
dk_media_mount "$kind" 1G
M=$DK_MNT
head -c 16384 /dev/zero > "$M/a.dat"
timeout -s KILL 240 "$cli" run --dir "$M" --atomic-mmap "$M/*.dat" -- "$prog" "$M/a.dat" "$window"
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 137 ] && dk_fail "mmap_signal_unlock $window on $kind hung (killed after 240 s, its watchdog silent)"
[ $rc -eq 0 ] || dk_fail "mmap_signal_unlock $window on $kind exited with $rc"
echo "mmap_signal_unlock $window on $kind: ok"
