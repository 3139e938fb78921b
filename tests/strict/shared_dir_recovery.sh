#!/usr/bin/env bash
# Description: recovery across users in a directory several users write (review 12, findings 12 and 11).
# 12: nobody's strict process dies with a write logged and not applied (AAAA at 0); before, another user's
# program then served the file (root read 0000, wrote BBBB, acknowledged) and nobody's next start replayed
# AAAA over it; `daxkit recover DIR` as root said "0 dead process(es)" and left nobody's log. Now a
# privileged process (root) replays another user's log -- onto files that user may write only -- before
# it serves them, and a process that may not (another user, or root facing a log naming a file its user
# may not write) serves the files below that area through the kernel and says whose recovery is pending;
# `daxkit recover` as root recovers every user's, as another user exits 1 naming the user it left.
# 11: an area made by an ordinary user (who may rename every entry of it) keeps no other user's files:
# their files are served by the kernel; in an area root made nobody can move root's log.
# Needs root (setpriv to nobody and to uid 4242). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_root
dk_need_python
dk_need_cmd setpriv
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_media_mount tmpfs 256M >/dev/null
M=$DK_MNT
chmod 755 "$M"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
as_other=(setpriv --reuid=4242 --regid=4242 --clear-groups)
run() { env LD_PRELOAD="$lib" DAXKIT_DIR="$1" DAXKIT_MODE=strict DAXKIT_STATS=0 "${@:2}"; }
# crash_write DIR FILE: nobody's strict program writes AAAA at 0 and dies with it logged, not applied
crash_write() {
    "${as_nobody[@]}" env LD_PRELOAD="$lib" DAXKIT_DIR="$1" DAXKIT_MODE=strict DAXKIT_STATS=0 \
        DAXKIT_TEST_CRASH=strict.write.logged:1 python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.pwrite(fd, b"AAAA", 0)' "$1/$2" 2>/dev/null
}
# read_write DIR FILE [USER...]: prints what the program read at 0, then pwrites BBBB there
read_write='
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
r = os.pread(fd, 4, 0).decode()
print(r, os.pwrite(fd, b"BBBB", 0))'
logs() { find "$1/.daxkit" -maxdepth 1 -name '*.log' -user nobody 2>/dev/null | wc -l; }
fresh() { # fresh DIR [area-by-root]: a 1777 directory, file f = 0000000000 (0666, nobody's)
    rm -rf "$1"
    mkdir -m 1777 "$1"
    [ "${2:-}" = root-area ] && mkdir -m 1777 "$1/.daxkit"
    "${as_nobody[@]}" sh -c "umask 0; printf 0000000000 > $1/f"
}

# 1. root after nobody's crash (the area root's): root's start replays nobody's record, then serves f
S=$M/one
fresh "$S" root-area
crash_write "$S" f
n0=$(logs "$S")
got=$(run "$S" python3 -c "$read_write" "$S/f" 2>"$M/err1")
run "$S" true
"${as_nobody[@]}" env LD_PRELOAD="$lib" DAXKIT_DIR="$S" DAXKIT_MODE=strict DAXKIT_STATS=0 true 2>/dev/null
echo "1. nobody's log(s) $n0; root read+wrote: '$got'; then f = '$(cat "$S/f")', nobody's logs $(logs "$S")"
[ "$n0" -ge 1 ] || fail "1: nobody's crash left no log (the check proves nothing)"
[ "$got" = "AAAA 4" ] || fail "1: root read '$got' (want AAAA: nobody's acknowledged write, replayed by root's start)"
[ "$(cat "$S/f")" = BBBB000000 ] || fail "1: f = '$(cat "$S/f")' after nobody's next start (want BBBB000000: root's acknowledged write, later than nobody's)"
[ "$(logs "$S")" = 0 ] || fail "1: nobody's log left after root's start"
grep -q "pending\|belongs to" "$M/err1" && fail "1: root's program said: $(cat "$M/err1")"

# 2. daxkit recover as root after nobody's crash: recovers it (exit 0, 1 dead process), the log goes
S=$M/two
fresh "$S" root-area
crash_write "$S" f
out=$("$cli" recover "$S" 2>&1)
rc=$?
echo "2. daxkit recover as root: exit $rc, f = '$(cat "$S/f")', nobody's logs $(logs "$S"): $(echo "$out" | head -1)"
[ "$rc" = 0 ] || fail "2: daxkit recover as root exit $rc: $out"
[ "$(cat "$S/f")" = AAAA000000 ] || fail "2: f = '$(cat "$S/f")' (want AAAA000000: nobody's logged write)"
[ "$(logs "$S")" = 0 ] || fail "2: daxkit recover as root left nobody's log"

# 3. another ordinary user (uid 4242) after nobody's crash: may not replay it -- f is served by the kernel,
# said; its daxkit recover exits 1 naming uid 65534; root's then recovers it
S=$M/three
fresh "$S" root-area
crash_write "$S" f
got=$("${as_other[@]}" env LD_PRELOAD="$lib" DAXKIT_DIR="$S" DAXKIT_MODE=strict DAXKIT_STATS=0 \
    python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); print(os.pread(fd, 4, 0).decode())" "$S/f" 2>"$M/err3")
out=$("${as_other[@]}" "$cli" recover "$S" 2>&1)
rc=$?
echo "3. uid 4242 read '$got', said: $(head -c 160 "$M/err3"); its daxkit recover: exit $rc"
grep -q "recovery pending for uid 65534" "$M/err3" || fail "3: uid 4242's program did not say the recovery pending for uid 65534: '$(cat "$M/err3")'"
[ "$rc" = 1 ] && grep -q "uid 65534" <<<"$out" || fail "3: daxkit recover as uid 4242: exit $rc (want 1, naming uid 65534): $out"
[ "$(logs "$S")" -ge 1 ] || fail "3: nobody's log gone after uid 4242's recover"
"$cli" recover "$S" >/dev/null 2>&1 || fail "3: daxkit recover as root then: exit $?"
[ "$(logs "$S")" = 0 ] && [ "$(cat "$S/f")" = AAAA000000 ] || fail "3: after root's recover: logs $(logs "$S"), f '$(cat "$S/f")'"

# 4. root facing nobody's log for a file nobody may no longer write (root's, 0644): not replayed with
# root's rights -- kept, f served by the kernel, said; daxkit recover exits 1
S=$M/four
fresh "$S" root-area
crash_write "$S" f
chown root:root "$S/f"
chmod 644 "$S/f"
got=$(run "$S" python3 -c "$read_write" "$S/f" 2>"$M/err4")
out=$("$cli" recover "$S" 2>&1)
rc=$?
echo "4. root read+wrote '$got' (f not nobody's to write): f = '$(cat "$S/f")', nobody's logs $(logs "$S"), recover exit $rc"
[ "$got" = "0000 4" ] || fail "4: root read+wrote '$got' (want '0000 4': the record not replayed onto a file nobody may not write)"
[ "$(logs "$S")" -ge 1 ] || fail "4: nobody's log was replayed or removed by root"
grep -q "recovery pending for uid 65534" "$M/err4" || fail "4: root's program did not say the recovery is pending: '$(cat "$M/err4")'"
[ "$rc" = 1 ] || fail "4: daxkit recover as root: exit $rc (want 1: a log left): $out"

# 5 (finding 11). an area nobody made: root's files are not kept there (served by the kernel, said); in
# an area root made, nobody cannot move root's log
S=$M/five
fresh "$S"
# (nobody's strict program makes the area by its first logged operation: the create of a new name -- an O_CREAT
# open of the existing f logs nothing since session 29)
"${as_nobody[@]}" env LD_PRELOAD="$lib" DAXKIT_DIR="$S" DAXKIT_MODE=strict DAXKIT_STATS=0 sh -c "echo x >> $S/f; : > $S/g"
owner=$(stat -c %U "$S/.daxkit")
# root's files in the area counted while its program lives (a clean exit removes its log)
got=$(run "$S" python3 -c "$read_write"'
a = os.path.dirname(sys.argv[1]) + "/.daxkit"
print(sum(1 for n in os.listdir(a) if os.lstat(a + "/" + n).st_uid == 0))' "$S/f" 2>"$M/err5")
mine=$(echo "$got" | tail -1)
got=$(echo "$got" | head -1)
echo "5. area made by $owner: root read+wrote '$got', root's files in it $mine, said: $(head -c 120 "$M/err5")"
[ "$owner" = nobody ] || fail "5: the area is $owner's (the check proves nothing)"
[ "$got" = "0000 4" ] || fail "5: root's write in a directory whose area is nobody's: '$got'"
[ "$mine" = 0 ] || fail "5: root keeps $mine file(s) in nobody's area (nobody may rename them)"
grep -q "belongs to uid 65534" "$M/err5" || fail "5: root's program did not say why: '$(cat "$M/err5")'"
S=$M/six
fresh "$S" root-area
run "$S" bash -c "exec 3>>$S/r; for i in \$(seq 400); do echo record\$i >&3; sleep 0.05; done" 2>/dev/null &
pid=$!
for _ in $(seq 100); do [ -n "$(find "$S/.daxkit" -name '*.log' -user root)" ] && break; sleep 0.05; done
moved=0 rootfiles=0
for f in $(find "$S/.daxkit" -user root -type f); do
    rootfiles=$((rootfiles + 1))
    "${as_nobody[@]}" mv "$f" "$f.gone" 2>/dev/null && moved=$((moved + 1))
done
kill -9 $pid
wait $pid 2>/dev/null
echo "6. area made by root: nobody moved $moved of root's $rootfiles file(s)"
[ "$rootfiles" -ge 1 ] || fail "6: root's strict program kept no file in the area (the check proves nothing)"
[ "$moved" = 0 ] || fail "6: nobody moved $moved of root's files in root's area"

# 7. a live process of nobody changes nothing for uid 4242 (its locks are held: /proc/locks); once it is
# killed with a record logged, uid 4242's next program is served by the kernel and told
S=$M/seven
fresh "$S" root-area
"${as_nobody[@]}" env LD_PRELOAD="$lib" DAXKIT_DIR="$S" DAXKIT_MODE=strict DAXKIT_STATS=0 python3 -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
os.pwrite(fd, b"AAAA", 0)
print("ready", flush=True); time.sleep(60)' "$S/f" > "$M/ready7" 2>/dev/null &
pid=$!
for _ in $(seq 100); do grep -q ready "$M/ready7" 2>/dev/null && break; sleep 0.05; done
other_read() {
    "${as_other[@]}" env LD_PRELOAD="$lib" DAXKIT_DIR="$S" DAXKIT_MODE=strict DAXKIT_STATS=0 \
        python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); print(os.pread(fd, 4, 0).decode())" "$S/f"
}
live=$(other_read 2>&1)
kill -9 $pid
wait $pid 2>/dev/null
dead=$(other_read 2>&1)
echo "7. uid 4242 while nobody's program lives: '$live'; after it was killed: '$(echo "$dead" | head -c 100)'"
grep -q "pending" <<<"$live" && fail "7: uid 4242 told of a pending recovery while nobody's program lives: $live"
[ "$(logs "$S")" -ge 1 ] || fail "7: nobody's killed program left no log (the check proves nothing)"
grep -q "recovery pending for uid 65534" <<<"$dead" || fail "7: uid 4242 not told after nobody's program was killed: $dead"

[ "$fails" = 0 ] || dk_fail "$fails check(s) failed"
echo "shared_dir_recovery.sh: root replays other users' logs onto files they may write; others' files wait for them, served by the kernel; an ordinary user's area keeps no other user's files"
