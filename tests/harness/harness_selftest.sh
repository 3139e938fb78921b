#!/usr/bin/env bash
# Description: the media harness (tests/harness/media.sh) makes each medium with the right file system and
# options, removes the mount point, loop device and image when the test script exits (normally, by error,
# by SIGTERM), gives parallel tests distinct media, reaps what a SIGKILLed test left behind, makes the managed
# directory (dk_managed_dir), refuses to run in a subshell, skips (77) as a non-root user, and finds the build's
# library and CLI.
# Exit 0 pass, 1 fail, 77 skip (not root).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/media.sh"
dk_need_root
tmp=$(mktemp -d) && dk_on_exit "rm -rf '$tmp'"

# A child test script: mounts KIND, records what it made in $tmp/KIND.made, then runs ACTION.
child() { # child KIND ACTION
    bash -c '
        . "$1/media.sh"
        dk_media_mount "$2" >/dev/null
        echo "$DK_MNT|$DK_MEDIA_LOOP|$DK_MEDIA_IMAGE" > "$3"
        echo probe > "$DK_MNT/file" || exit 1
        case $4 in
        ok) exit 0 ;;
        fail) exit 1 ;;
        term) kill -TERM $$; sleep 5 ;;
        kill) kill -KILL $$ ;;
        esac' child "$here" "$1" "$tmp/$1.made" "$2"
}

# Everything KIND's child made is gone.
check_gone() { # check_gone KIND HOW
    local mnt loop image
    IFS='|' read -r mnt loop image < "$tmp/$1.made"
    ! mountpoint -q "$mnt" 2>/dev/null || dk_fail "$1 ($2): $mnt still mounted"
    [ ! -e "$mnt" ] || dk_fail "$1 ($2): mount point $mnt still exists"
    [ -z "$image" ] || [ ! -e "$image" ] || dk_fail "$1 ($2): image $image still exists"
    [ -z "$image" ] || [ -z "$(losetup -j "$image" 2>/dev/null)" ] || dk_fail "$1 ($2): $image still on a loop device"
}

checked=0
for kind in hugetmpfs tmpfs xfs ext4; do
    # The medium is what was asked for.
    out=$(bash -c '. "$1/media.sh"; dk_media_mount "$2" >/dev/null; findmnt -n -o FSTYPE,OPTIONS --target "$DK_MNT"' \
          x "$here" "$kind" 2>&1)
    rc=$?
    if [ $rc = 77 ]; then echo "SKIPPED $kind: $out"; continue; fi
    [ $rc = 0 ] || dk_fail "$kind: mount failed ($rc): $out"
    echo "$kind: $out"
    case $kind in
    hugetmpfs) [[ $out == tmpfs*huge=always* ]] || dk_fail "hugetmpfs is not tmpfs huge=always: $out" ;;
    tmpfs) [[ $out == tmpfs* && $out != *huge=always* && $out != *huge=within* ]] || dk_fail "tmpfs has huge pages: $out" ;;
    xfs) [[ $out == xfs* ]] || dk_fail "xfs medium is $out" ;;
    ext4) [[ $out == ext4* ]] || dk_fail "ext4 medium is $out" ;;
    esac
    for how in ok fail term; do
        child "$kind" "$how"
        check_gone "$kind" "exit after $how"
    done
    checked=$((checked + 1))
done
[ $checked -gt 0 ] || dk_skip "no medium could be made here"
if [ -e "$tmp/xfs.made" ]; then parallel_kind=xfs; else parallel_kind=tmpfs; fi

# Two tests at once get distinct media, and both work.
bash -c '. "$1/media.sh"; dk_media_mount "$2" >/dev/null; echo "$DK_MNT" > "$3"; sleep 1' x "$here" $parallel_kind "$tmp/p1" &
bash -c '. "$1/media.sh"; dk_media_mount "$2" >/dev/null; echo "$DK_MNT" > "$3"; sleep 1' x "$here" $parallel_kind "$tmp/p2" &
wait %1 || dk_fail "parallel mount 1 failed"
wait %2 || dk_fail "parallel mount 2 failed"
[ "$(cat "$tmp/p1")" != "$(cat "$tmp/p2")" ] || dk_fail "parallel tests got the same mount point"

# A SIGKILLed test cannot clean up; the next dk_media_mount (dk_media_reap) does.
(child $parallel_kind kill) 2>/dev/null # the shell reports the kill; expected
IFS='|' read -r mnt _ _ < "$tmp/$parallel_kind.made"
mountpoint -q "$mnt" || dk_fail "expected the killed test's $mnt to be left mounted"
bash -c '. "$1/media.sh"; dk_media_reap' x "$here"
check_gone $parallel_kind "reaped after SIGKILL"

# dk_managed_dir: the medium, and the managed directory on it (what most script tests begin with).
out=$(bash -c '. "$1/media.sh"; printed=$(dk_managed_dir tmpfs 64M 2>&1) || printed="refused: $printed"
    dk_managed_dir tmpfs 64M >/dev/null; [ -d "$DK_DIR" ] || exit 1
    echo "$printed|$DK_DIR|$DK_MNT|$(findmnt -n -o FSTYPE --target "$DK_DIR")"' x "$here" 2>&1) ||
    dk_fail "dk_managed_dir: no directory made: $out"
IFS='|' read -r printed ddir dmnt dfs <<< "$out"
[[ $printed == *subshell* ]] || dk_fail "dk_managed_dir in \$(...) was not refused: $printed"
[ "$ddir" = "$dmnt/managed" ] && [ "$dfs" = tmpfs ] || dk_fail "dk_managed_dir: DK_DIR $ddir on $dfs, DK_MNT $dmnt"
! mountpoint -q "$dmnt" 2>/dev/null && [ ! -e "$dmnt" ] || dk_fail "dk_managed_dir: $dmnt left behind"

# Misuse and environment.
out=$(bash -c '. "$1/media.sh"; d=$(dk_media_mount tmpfs); echo "got $d"' x "$here" 2>&1)
[[ $out == *"subshell"* ]] || dk_fail "dk_media_mount in \$(...) was not refused: $out"
bash -c '. "$1/media.sh"; dk_media_mount floppy' x "$here" >/dev/null 2>&1
[ $? = 1 ] || dk_fail "an unknown KIND did not fail"
if command -v setpriv >/dev/null; then
    setpriv --reuid=65534 --regid=65534 --clear-groups bash -c '. "$1/media.sh"; dk_need_root' x "$here" 2>/dev/null
    rc=$?
    [ $rc = 77 ] || dk_fail "dk_need_root as uid 65534 exited $rc, expected 77"
fi
[ "$(DAXKIT_BUILD=/b bash -c '. "$1/media.sh"; dk_lib' x "$here" 2>/dev/null)" = "" ] ||
    dk_fail "dk_lib printed a path for a build that does not exist"
if [ -n "${DAXKIT_BUILD:-}" ] && [ -e "$DAXKIT_BUILD/lib/libdaxkit.so" ]; then
    [ "$(dk_lib)" = "$DAXKIT_BUILD/lib/libdaxkit.so" ] || dk_fail "dk_lib: $(dk_lib)"
    [ "$(dk_cli)" = "$DAXKIT_BUILD/bin/daxkit" ] || dk_fail "dk_cli: $(dk_cli)"
fi
echo "PASS: harness made and removed $checked media kinds"
