#!/usr/bin/env bash
# Description: DAXKIT_ATOMIC, a file renamed while open and then SIGKILLed mid-transaction (route_rename.c):
# (1) without recovery the kernel file is not the committed state (else this test proves nothing);
# (2) a new process under `daxkit run` WITHOUT --atomic that only stats and reads the renamed file sees the
#     committed state: library start-up recovered the log, found under the file's key although the file was
#     renamed after its log was made (the hint in the log is stale: recovery walks the root);
# (3) the same through the route (--atomic, start-up recovery off) after a second crash, and no log is left
#     after a clean close; (4) the log of a crashed file removed since is set aside as <key>.orphan, (5) after a
#     walk of the root that read each directory through a descriptor of the library's (strace).
# route_rename.sh [KIND]   KIND: a harness medium (hugetmpfs, xfs); default /dev/shm. Exit 0/1/77.
set -euo pipefail
. "$DAXKIT_SRC/tests/harness/media.sh"
prog=$(dk_test_bin route_rename) || exit 1
daxkit=$DAXKIT_BUILD/bin/daxkit
if [ -n "${1:-}" ]; then
    dk_need_root
    dk_media_mount "$1"
    dir=$DK_MNT/rr
else
    dir=/dev/shm/dk_route_rename.$$
    trap 'rm -rf "$dir"' EXIT
fi
rm -rf "$dir" && mkdir -p "$dir/sub"

crash_writer() {  # A B: writes, renames, commits, writes more; SIGKILLed once it says ready
    local out=$dir/.out.$$
    "$daxkit" run --dir "$dir" --atomic "$dir/*" -- "$prog" write "$1" "$2" > "$out" &
    local pid=$! i
    for i in $(seq 1 500); do grep -q ready "$out" 2>/dev/null && break; sleep 0.02; done
    grep -q ready "$out" || dk_fail "the writer never got ready"
    kill -9 $pid
    wait $pid 2>/dev/null || true
    rm -f "$out"
}

crash_writer "$dir/a" "$dir/sub/b"
[ -e "$dir/a" ] && dk_fail "a still exists after the rename"
ls "$dir/.daxkit/atomic/"*.alog > /dev/null 2>&1 || dk_fail "no log in $dir/.daxkit/atomic"
if "$prog" check "$dir/sub/b" > /dev/null; then
    dk_fail "the unrecovered kernel file already equals the committed state: the test proves nothing"
fi
echo "route_rename: before recovery the kernel file is $(stat -c %s "$dir/sub/b") bytes (not the committed state)"
"$daxkit" run --dir "$dir" -- "$prog" check "$dir/sub/b" "$dir/a" || dk_fail "start-up recovery (reader without --atomic)"
"$prog" check "$dir/sub/b" > /dev/null || dk_fail "the kernel file after start-up recovery"

# Again on the renamed file, recovered by the route itself this time (start-up recovery off).
crash_writer "$dir/sub/b" "$dir/c"
if "$prog" check "$dir/c" > /dev/null; then
    dk_fail "the unrecovered kernel file already equals the committed state (second crash): step (3) proves nothing"
fi
DAXKIT_ATOMIC_RECOVER_START=0 ROUTE_RENAME_OPEN_FIRST=1 "$daxkit" run --dir "$dir" --atomic "$dir/*" -- "$prog" check "$dir/c" "$dir/sub/b" ||
    dk_fail "recovery through the route"
ls "$dir/.daxkit/atomic/"*.alog > /dev/null 2>&1 && dk_fail "a log is left after a clean close"

# (4) A crashed file then removed by a program not under daxkit: the next start keeps its log as
# <key>.orphan (said on stderr), so that later start-ups do not walk the root for it again.
crash_writer "$dir/c" "$dir/d"
rm -f "$dir/d"
# (5) That start-up's walk of the root reads each directory through a descriptor of the library's (a high
# number taken in its descriptor window), not one at the lowest free number, which the program may be about
# to get from its own open (review 24: glibc's opendir). strace -y names each getdents64's directory.
if command -v strace > /dev/null; then
    trace=$dir.strace # (not dk_on_exit: it would take the place of this script's own trap)
    strace -f -qq -y -e trace=getdents64 -o "$trace" "$daxkit" run --dir "$dir" -- true 2> /dev/null
    reads=$(sed -nE 's/.*getdents64\(([0-9]+)<(.*)>, .*/\1 \2/p' "$trace" | awk -v d="$dir" '$2 == d || index($2, d "/") == 1' | sort -u)
    rm -f "$trace"
    grep -q " $dir/sub\$" <<< "$reads" || dk_fail "no getdents64 of $dir/sub in the start-up: the walk did not run? $reads"
    low=$(awk '$1 < 16' <<< "$reads")
    [ -z "$low" ] || dk_fail "the start-up's walk read directories through low numbers (the program's):" $low
    echo "route_rename: the walk read $(wc -l <<< "$reads") directories, all through the library's numbers"
else
    echo "route_rename: no strace: the walk's descriptor numbers are not checked"
    "$daxkit" run --dir "$dir" -- true 2> /dev/null
fi
ls "$dir/.daxkit/atomic/"*.orphan > /dev/null 2>&1 || dk_fail "the log of a removed file was not set aside"
ls "$dir/.daxkit/atomic/"*.alog > /dev/null 2>&1 && dk_fail "the log of a removed file is still a live log"
echo "route_rename: PASS"
