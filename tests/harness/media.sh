# shellcheck shell=bash
# tests/harness/media.sh -- the media every script test runs on. Source it:
#
#     . "$DAXKIT_SRC/tests/harness/media.sh"
#     dk_need_root
#     dk_media_mount xfs            # sets DK_MNT (and prints it); unmounted when the script exits
#     "$(dk_cli)" doctor "$DK_MNT"
#
# Functions (all exit the test script with 77 and a reason when something needed is missing -- never a
# silent pass; with 1 on a harness error):
#
#   dk_skip REASON...        print "SKIP: REASON" to stderr, exit 77
#   dk_fail REASON...        print "FAIL: REASON" to stderr, exit 1
#   dk_need_root             skip unless running as root (mounting needs it)
#   dk_need_cmd CMD...       skip unless every CMD is on PATH
#   dk_on_exit COMMAND...    run COMMAND when the script exits (last registered runs first)
#   dk_media_mount KIND [SIZE]
#                            make a fresh medium, mount it, set DK_MNT to its directory, print DK_MNT.
#                            KIND: hugetmpfs  tmpfs -o huge=always (default size 1G)
#                                  tmpfs      tmpfs with 4 KiB pages, huge=never (default 512M)
#                                  xfs        XFS -m reflink=1 on a loop device over an image in /dev/shm
#                                             (RAM-backed; default 512M -- mkfs.xfs needs >= 300M)
#                                             DK_MEDIA_XFS_MKFS adds mkfs.xfs options (e.g. "-b size=1024")
#                                  ext4       ext4 on a loop device over an image in /dev/shm (default 256M)
#                                  dir        no mount: a fresh subdirectory of the existing directory
#                                             $DK_MEDIA_DIR (e.g. a DAX mount inside the FS-DAX guest,
#                                             tests/dax/); SIZE is ignored; removed with its contents on exit
#                            SIZE as mount/truncate accept it (512M, 2G); DK_MEDIA_SIZE sets the default.
#                            Names are unique (kind, pid, random) so tests may run in parallel; the mount
#                            point, loop device and image are removed on exit. Call it directly, not in
#                            $(...): a subshell would unmount the medium when it ends.
#                            Also sets DK_MEDIA_KIND, DK_MEDIA_LOOP (loop device or "") and DK_MEDIA_IMAGE.
#   dk_managed_dir KIND [SIZE]
#                            dk_media_mount KIND SIZE, then make the directory the library manages,
#                            $DK_MNT/managed (mkdir -p, the caller's umask); set DK_DIR to it and print it.
#                            Call it directly, not in $(...), as dk_media_mount. A test that needs a
#                            different directory (the medium's root, several, other modes) mounts itself.
#   dk_media_reap            unmount and remove media left behind by test processes that no longer exist
#                            (a test killed by a timeout cannot clean up); dk_media_mount calls it first.
#   dk_lib                   print $DAXKIT_BUILD/lib/libdaxkit.so (fail if not built)
#   dk_cli                   print $DAXKIT_BUILD/bin/daxkit (fail if not built)
#   dk_test_bin NAME         print $DAXKIT_BUILD/tests/NAME (fail if not built)
#                            These run in $(...), where a failure ends only the subshell: write
#                            lib=$(dk_lib) || exit 1
#
# Cleanup: register extra cleanup with dk_on_exit, not `trap ... EXIT` (which would replace the harness's
# trap and leave media mounted). Scripts may use set -euo pipefail.
#
# Environment: DAXKIT_BUILD (build directory), DAXKIT_SRC (source tree), set by ctest. DK_MEDIA_ROOT is where
# mount points are made (default /tmp); images always live in /dev/shm so loop media are RAM-backed.

DK_MEDIA_ROOT=${DK_MEDIA_ROOT:-/tmp}
DK_MEDIA_PREFIX=daxkit-media
DK_MNT=
DK_DIR=
DK_MEDIA_KIND=
DK_MEDIA_LOOP=
DK_MEDIA_IMAGE=
_DK_CLEANUP=()
_DK_TRAP_SET=

dk_skip() { echo "SKIP: $*" >&2; exit 77; }
dk_fail() { echo "FAIL: $*" >&2; exit 1; }

dk_need_root() {
    [ "$(id -u)" = 0 ] || dk_skip "needs root (mounts file systems and loop devices); run as root"
}

dk_need_cmd() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || dk_skip "'$c' not found; run scripts/deps.sh test"
    done
}

_dk_run_cleanup() {
    local rc=$? i
    trap - EXIT
    for ((i = ${#_DK_CLEANUP[@]} - 1; i >= 0; i--)); do
        eval "${_DK_CLEANUP[$i]}" || true
    done
    _DK_CLEANUP=()
    exit "$rc"
}

dk_on_exit() {
    _DK_CLEANUP+=("$*")
    if [ -z "$_DK_TRAP_SET" ]; then
        _DK_TRAP_SET=1
        trap _dk_run_cleanup EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
    fi
}

# dk_kill_wait PID: SIGKILL, then wait until the process has exited -- gone, or a zombie with no thread left
# (a leader is a zombie while its other threads still exit, and the shared descriptors, flocks and mappings go
# with the last of them: review 19 #05) -- instead of a fixed sleep (stop21: a fixed sleep failed CI). Fails
# after 20 s.
dk_kill_wait() {
    kill -9 "$1" 2>/dev/null
    local i state
    for i in $(seq 1 800); do
        state=$(sed -n 's/^.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null)
        [ -z "$state" ] && return 0
        [ "$state" = Z ] && [ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -le 1 ] && return 0
        sleep 0.025
    done
    dk_fail "process $1 still runs 20 s after SIGKILL"
}

_dk_need_file() { [ -e "$1" ] || dk_fail "$1 not found; build first (make, or ninja -C \$DAXKIT_BUILD)"; echo "$1"; }
_dk_need_build() { [ -n "${DAXKIT_BUILD:-}" ] || dk_fail "DAXKIT_BUILD is not set (ctest sets it; or export it)"; }
dk_lib() { _dk_need_build; _dk_need_file "$DAXKIT_BUILD/lib/libdaxkit.so"; }
dk_cli() { _dk_need_build; _dk_need_file "$DAXKIT_BUILD/bin/daxkit"; }
dk_test_bin() { _dk_need_build; _dk_need_file "$DAXKIT_BUILD/tests/$1"; }
# The python3 interpreter's own file, for a program run under LD_PRELOAD: `python3` may be a pyenv shim (a bash
# script that runs ~30 processes before the interpreter), and each of them would load the library too -- 2.6x
# the CPU of a start (0.16 s against 0.06 s here), which load multiplies (session 28: full_medium_retry.sh).
dk_python() { python3 -c 'import sys; print(sys.executable)'; }
# A script that runs Python (under the library or not) calls this instead of `dk_need_cmd python3`: it skips
# without python3 and puts the interpreter's own directory first in PATH, so that every `python3` after it -- `env
# LD_PRELOAD=... python3`, `daxkit run -- python3`, a Python program's own subprocess -- is the interpreter, not a
# pyenv shim (session 29: 27+ scripts ran the shim's ~30 processes a start under LD_PRELOAD).
dk_need_python() {
    dk_need_cmd python3
    local py
    py=$(dk_python) || dk_fail "cannot find python3's interpreter"
    [ -x "${py%/*}/python3" ] && PATH="${py%/*}:$PATH" && export PATH
    return 0
}

# Unmounts DIR (lazily if busy), detaches LOOP, removes IMAGE and DIR. Every step tolerates "already gone".
_dk_media_remove() {
    local dir=$1 loop=$2 image=$3
    if [ -n "$dir" ] && mountpoint -q "$dir" 2>/dev/null; then
        umount "$dir" 2>/dev/null || umount -l "$dir" 2>/dev/null || true
    fi
    [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
    [ -n "$image" ] && rm -f "$image"
    # A directory that is not empty (a test's leftover beside its medium, e.g. strict/powerloss.sh's
    # <medium>.acked.PID after a failure) stays: under set -e a failing rmdir here ended every later test.
    [ -n "$dir" ] && { rmdir "$dir" 2>/dev/null || true; }
    return 0
}

# Media are named $DK_MEDIA_PREFIX.KIND.PID.RANDOM; a loop image records its loop device in a .loop file.
dk_media_reap() {
    local path base pid loop
    for path in "$DK_MEDIA_ROOT/$DK_MEDIA_PREFIX".* /dev/shm/"$DK_MEDIA_PREFIX".*.img; do
        [ -e "$path" ] || continue
        base=${path##*/}
        pid=$(echo "$base" | cut -d. -f3)
        [[ "$pid" =~ ^[0-9]+$ ]] || continue
        kill -0 "$pid" 2>/dev/null && continue
        case $path in
        *.img)
            loop=$(losetup -j "$path" -O NAME -n 2>/dev/null | head -1)
            _dk_media_remove "" "$loop" "$path" ;;
        *) _dk_media_remove "$path" "" "" ;;
        esac
    done
}

_dk_media_default_size() {
    case $1 in
    hugetmpfs) echo 1G ;;
    tmpfs) echo 512M ;;
    xfs) echo 512M ;;
    ext4) echo 256M ;;
    dir) echo - ;;
    esac
}

# Makes an image in /dev/shm, formats it with "$@", attaches a loop device. Sets DK_MEDIA_LOOP/IMAGE.
_dk_media_loop() {
    local kind=$1 size=$2 name=$3 out
    shift 3
    [ -w /dev/shm ] || dk_skip "/dev/shm is not writable: no RAM-backed image for the $kind loop medium"
    [ -e /dev/loop-control ] || modprobe loop 2>/dev/null || true
    [ -e /dev/loop-control ] || dk_skip "loop devices unavailable (no /dev/loop-control; modprobe loop failed)"
    DK_MEDIA_IMAGE=/dev/shm/$name.img
    dk_on_exit "rm -f '$DK_MEDIA_IMAGE'"
    truncate -s "$size" "$DK_MEDIA_IMAGE" || dk_fail "truncate -s $size $DK_MEDIA_IMAGE failed"
    out=$("$@" "$DK_MEDIA_IMAGE" 2>&1) || dk_skip "cannot make the $kind medium: '$* IMAGE' failed: $out"
    out=$(losetup --find --show "$DK_MEDIA_IMAGE" 2>&1) || dk_skip "loop devices unavailable: losetup: $out"
    DK_MEDIA_LOOP=$out
    dk_on_exit "dk_loop_detach_ours '$DK_MEDIA_LOOP' '$DK_MEDIA_IMAGE'"
}

# Detaches loop device DEV if it still holds IMAGE. A test that moves its medium to another device
# (strict/powerloss.sh) leaves the old number free, and another test running at the same time may have
# taken it since: an unconditional detach at exit took that test's device away (CI: strict_powerloss_ext4,
# "losetup -d /dev/loop2 failed").
dk_loop_detach_ours() {
    [ "$(losetup -n -O BACK-FILE "$1" 2>/dev/null)" = "$2" ] && losetup -d "$1" 2>/dev/null
    return 0
}

# KIND dir: a fresh subdirectory of $DK_MEDIA_DIR, an existing directory on the medium under test.
_dk_media_dir() {
    [ -n "${DK_MEDIA_DIR:-}" ] || dk_skip "medium 'dir' needs DK_MEDIA_DIR (an existing directory to test in)"
    [ -d "$DK_MEDIA_DIR" ] && [ -w "$DK_MEDIA_DIR" ] || dk_fail "DK_MEDIA_DIR=$DK_MEDIA_DIR is not a writable directory"
    DK_MNT=$DK_MEDIA_DIR/$DK_MEDIA_PREFIX.dir.$$.$RANDOM$RANDOM
    DK_MEDIA_KIND=dir
    DK_MEDIA_LOOP=
    DK_MEDIA_IMAGE=
    mkdir "$DK_MNT" || dk_fail "mkdir $DK_MNT failed"
    dk_on_exit "rm -rf '$DK_MNT'"
    chmod 1777 "$DK_MNT"
    echo "$DK_MNT"
}

dk_media_mount() {
    local kind=${1:-} size=${2:-${DK_MEDIA_SIZE:-}} name out opts
    [ "$BASHPID" = "$$" ] || dk_fail "dk_media_mount called in a subshell (\$(...) or a pipe): the medium would be removed when the subshell ends; call it directly and use \$DK_MNT"
    [ -n "$kind" ] || dk_fail "dk_media_mount: KIND missing (hugetmpfs|tmpfs|xfs|ext4|dir)"
    [ -n "$(_dk_media_default_size "$kind")" ] || dk_fail "dk_media_mount: unknown KIND '$kind' (hugetmpfs|tmpfs|xfs|ext4|dir)"
    [ "$kind" = dir ] && { _dk_media_dir; return; }
    dk_need_root
    dk_need_cmd mount umount mountpoint
    size=${size:-$(_dk_media_default_size "$kind")}
    dk_media_reap
    name=$DK_MEDIA_PREFIX.$kind.$$.$RANDOM$RANDOM
    DK_MNT=$DK_MEDIA_ROOT/$name
    DK_MEDIA_KIND=$kind
    DK_MEDIA_LOOP=
    DK_MEDIA_IMAGE=
    mkdir -p "$DK_MNT" || dk_fail "mkdir $DK_MNT failed"
    # Registered first, so it runs last: after the unmount below.
    dk_on_exit "rmdir '$DK_MNT' 2>/dev/null || true"
    case $kind in
    hugetmpfs)
        local thp=/sys/kernel/mm/transparent_hugepage/shmem_enabled
        [ -r $thp ] || dk_skip "kernel without transparent huge pages ($thp missing): no huge tmpfs"
        grep -q '\[deny\]' $thp && dk_skip "shmem huge pages are disabled ($thp is 'deny'); echo never > $thp to allow huge=always mounts"
        opts="huge=always,size=$size" ;;
    tmpfs) opts="huge=never,size=$size" ;;
    xfs)
        dk_need_cmd mkfs.xfs losetup
        # shellcheck disable=SC2086
        _dk_media_loop xfs "$size" "$name" mkfs.xfs -q -f -m reflink=1 ${DK_MEDIA_XFS_MKFS:-} ;;
    ext4)
        dk_need_cmd mkfs.ext4 losetup
        _dk_media_loop ext4 "$size" "$name" mkfs.ext4 -q -F -b 4096 -E nodiscard ;;
    esac
    if [ -n "$DK_MEDIA_LOOP" ]; then
        out=$(mount -t "$kind" "$DK_MEDIA_LOOP" "$DK_MNT" 2>&1) || dk_skip "cannot mount $kind from $DK_MEDIA_LOOP: $out"
    else
        out=$(mount -t tmpfs -o "$opts" "$DK_MEDIA_PREFIX" "$DK_MNT" 2>&1) || dk_skip "cannot mount tmpfs -o $opts: $out"
    fi
    dk_on_exit "umount '$DK_MNT' 2>/dev/null || umount -l '$DK_MNT' 2>/dev/null || true"
    chmod 1777 "$DK_MNT"
    echo "$DK_MNT"
}

# The mount-then-managed-directory set-up most script tests began with (session 24's open item 9).
dk_managed_dir() {
    [ "$BASHPID" = "$$" ] || dk_fail "dk_managed_dir called in a subshell (\$(...) or a pipe): the medium would be removed when the subshell ends; call it directly and use \$DK_DIR"
    dk_media_mount "$@" >/dev/null
    DK_DIR=$DK_MNT/managed
    mkdir -p "$DK_DIR" || dk_fail "mkdir $DK_DIR failed"
    echo "$DK_DIR"
}
