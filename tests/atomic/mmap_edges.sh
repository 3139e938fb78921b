#!/usr/bin/env bash
# Description: DAXKIT_ATOMIC_MMAP edge cases (mmap_edges.c; review 10) on a harness medium, each checked as the
# kernel's mmap would behave plus the crash promise (after a SIGKILL the next mapping finds the last msync's
# state). mmap_edges.sh KIND CASE; CASE:
#   tail     a 5000-byte file: stores into its last, partial page are logged and msync succeeds (finding 20)
#   logfull  an epoch of 80 MiB of stores, more than the default 64 MiB log (on XFS/ext4: the file mapped at
#            16 MiB first, so its log exists and is smaller, then grown to 96 MiB): msync succeeds, a later
#            one too, and a crash after 80 MiB of unsynced stores keeps none of them (finding 2)
#   race     a pwrite into a page racing another thread's stores + msync of it: the file keeps the last
#            pwrite (finding 9)
#   pwrite   a pwrite + fsync into a page stored into since the last msync survives munmap without msync
#            and a crash (finding 8)
#   readinto read(2) from a pipe and an unmanaged file into protected pages of the view (finding 7)
#   readinto-user  the same as nobody (user-mode-only userfaultfd): EFAULT on tmpfs, the documented limit
#   mremap   growing a view refused with ENOMEM (or made atomic), shrinking it in place works, then a crash
#            keeps no unsynced store (finding 6)
#   noreplace MAP_FIXED_NOREPLACE at the address asked for, or EEXIST (finding 17)
#   mprotect a view made read-only and writable again stays tracked (a store after it is rolled back by a crash),
#            msync works while read-only, munmap of a read-only view rolls back, PROT_NONE refused (EACCES)
#   grown    a file grown while mapped: a larger second mapping refused (ENOMEM) while the first lives (it would
#            alias it), failure-atomic after (6's addendum)
set -uo pipefail
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_root
kind=${1:?KIND} case=${2:?CASE}
prog=$(dk_test_bin mmap_edges) || exit 1
cli=$(dk_cli) || exit 1
case $kind in xfs | ext4) dk_media_mount "$kind" 1G ;; *) dk_media_mount "$kind" 768M ;; esac
M=$DK_MNT
run() { "$cli" run --dir "$M" --atomic-mmap "$M/*.dat" -- "$prog" "$@"; }
# run the case's program; 77 (skip) is passed on, any other failure fails the test
step() {
    run "$@"
    local rc=$?
    [ $rc -eq 77 ] && exit 77
    [ $rc -eq 0 ] || dk_fail "mmap_edges $* on $kind exited with $rc"
}
# crash FILE OFF LEN C, or crash FILE CASE ARGS: the program SIGKILLs itself (137); anything else is a failure
crash() {
    local f=$1
    shift
    case $1 in [0-9]*) set -- crash "$@" ;; esac
    run "$f" "$@"
    local rc=$?
    [ $rc -eq 77 ] && exit 77
    [ $rc -eq 137 ] || dk_fail "mmap_edges crash $* on $kind exited with $rc, want 137 (SIGKILL)"
}
case $case in
tail)
    head -c 5000 /dev/zero > "$M/t.dat"
    step "$M/t.dat" tail
    crash "$M/t.dat" 4700 1 X
    step "$M/t.dat" expect 4700 1 0 # the unsynced store into the last page: rolled back
    step "$M/t.dat" expect 4600 1 b # the msync'ed one kept
    ;;
logfull)
    if [ "$kind" = xfs ] || [ "$kind" = ext4 ]; then
        truncate -s 16M "$M/b.dat"
        step "$M/b.dat" expect 0 4096 0 # the log is made for a 16 MiB file
    fi
    truncate -s 96M "$M/b.dat"
    step "$M/b.dat" big 80
    crash "$M/b.dat" 0 83886080 D
    step "$M/b.dat" expect 2 83886078 B # none of the 80 MiB of unsynced stores survived the crash
    step "$M/b.dat" big 80
    ;;
race)
    head -c 8192 /dev/zero > "$M/r.dat"
    step "$M/r.dat" race 5 # without the fix 7 of 10 rounds lose the pwrite on XFS
    ;;
pwrite)
    head -c 4096 /dev/zero > "$M/w.dat"
    step "$M/w.dat" pwrite-rollback
    head -c 4096 /dev/zero > "$M/c.dat"
    crash "$M/c.dat" pwrite-rollback crash
    step "$M/c.dat" expect 0 1 W   # pwrite + fsync returned before the crash
    step "$M/c.dat" expect 100 1 A # the store was never msync'ed
    ;;
readinto)
    u=$(mktemp /tmp/dk_mmap_edges_unmanaged.XXXXXX)
    dk_on_exit "rm -f '$u'"
    head -c 4096 /dev/zero | tr '\0' U > "$u"
    head -c 8192 /dev/zero > "$M/i.dat"
    step "$M/i.dat" read-into "$u"
    ;;
readinto-user)
    # the documented limit: without CAP_SYS_PTRACE and with vm.unprivileged_userfaultfd=0 the file's own
    # mapping gets a user-mode-only userfaultfd, and a read(2) into a protected page fails with EFAULT
    [ "$(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)" = 0 ] ||
        dk_skip "vm.unprivileged_userfaultfd is not 0: an unprivileged process gets kernel faults too"
    dk_need_cmd setpriv
    head -c 8192 /dev/zero > "$M/e.dat"
    chown 65534:65534 "$M/e.dat"
    setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
        "$cli" run --dir "$M" --atomic-mmap "$M/*.dat" -- "$prog" "$M/e.dat" read-efault
    rc=$?
    [ $rc -eq 77 ] && exit 77
    [ $rc -eq 0 ] || dk_fail "mmap_edges read-efault as nobody on $kind exited with $rc"
    ;;
mremap)
    head -c 8192 /dev/zero > "$M/m.dat"
    crash "$M/m.dat" mremap
    step "$M/m.dat" expect 0 1 A # the msync'ed stores
    step "$M/m.dat" expect 1 1 B
    step "$M/m.dat" expect 2 1 0  # the unsynced store after the shrink: rolled back
    ;;
noreplace)
    head -c 4096 /dev/zero > "$M/n.dat"
    step "$M/n.dat" noreplace
    ;;
mprotect)
    head -c 8192 /dev/zero > "$M/p.dat"
    crash "$M/p.dat" mprotect
    step "$M/p.dat" expect 0 1 A    # the store after PROT_READ -> RW was logged: rolled back
    step "$M/p.dat" expect 4096 1 A
    step "$M/p.dat" expect 200 1 0  # rolled back by a munmap of a read-only view
    step "$M/p.dat" expect 300 1 M  # msync'ed while read-only
    ;;
grown)
    head -c 4096 /dev/zero > "$M/g.dat"
    crash "$M/g.dat" grown
    step "$M/g.dat" expect 0 1 A
    step "$M/g.dat" expect 4096 1 K # msync'ed through the larger mapping
    step "$M/g.dat" expect 5000 1 0 # never msync'ed: rolled back
    ;;
*) dk_fail "unknown case $case" ;;
esac
echo "mmap_edges $case on $kind: ok"
