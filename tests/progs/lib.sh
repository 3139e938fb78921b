# shellcheck shell=bash
# tests/progs/lib.sh -- shared by the real-program tests: each runs a program once through the kernel and
# once under daxkit on a managed directory of the same medium, and compares what the two left behind.
#
#     . "$(dirname "$0")/lib.sh"
#     dk_progs_setup MEDIUM              # mounts MEDIUM; sets K (kernel dir) and D (daxkit-managed dir)
#     dkrun CMD ARGS...                  # CMD under daxkit, managing $D (launcher, else LD_PRELOAD)
#     dk_free_port                       # prints an unused TCP port on 127.0.0.1
#     dk_tree_sum DIR                    # prints a digest of a tree (paths, types, modes, sizes, contents)
#
# Modes: DK_PROGS_MODE (posix|sync, default posix), DK_PROGS_APPEND (stage|extend|auto; default: the
# library's default). Exit codes follow tests/harness: 0 pass, 1 fail, 77 skip with a reason.

DK_PROGS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DAXKIT_SRC=${DAXKIT_SRC:-$(cd "$DK_PROGS_DIR/../.." && pwd)}
DAXKIT_BUILD=${DAXKIT_BUILD:-$DAXKIT_SRC/build}
export DAXKIT_SRC DAXKIT_BUILD
# shellcheck source=../harness/media.sh
. "$DAXKIT_SRC/tests/harness/media.sh"

DK_PROGS_MODE=${DK_PROGS_MODE:-posix}
DK_PROGS_APPEND=${DK_PROGS_APPEND:-}
K=
D=
_DK_HOW=

# Decides how to launch under daxkit, or skips (77) when the library cannot serve anything yet: a build
# whose libdaxkit.so exports no file functions would make every "daxkit" run a kernel run -- a silent pass.
dk_progs_need_daxkit() {
    local lib cli out
    if [ "${DK_PROGS_SELFTEST:-0}" = 1 ]; then  # checks the scripts themselves; never used by ctest
        _DK_HOW=kernel
        echo "SELFTEST: DK_PROGS_SELFTEST=1 -- the 'daxkit' runs below are kernel runs" >&2
        return 0
    fi
    lib=$(dk_lib) || exit 1
    cli=$(dk_cli) || exit 1
    nm -D --defined-only "$lib" 2>/dev/null | grep -w pwrite >/dev/null || # not -q: under pipefail nm, killed by SIGPIPE once its output passed 4 KiB, made every test skip
        dk_skip "$lib exports no file functions yet (placeholder library): nothing to compare with the kernel"
    out=$("$cli" run --dir /nonexistent -- /bin/sh -c 'echo launched' 2>&1) || true
    if [ "$out" = launched ]; then
        _DK_HOW=launcher
    else
        _DK_HOW=preload
        echo "note: 'daxkit run' does not launch yet (got: ${out:-nothing}); using LD_PRELOAD directly" >&2
    fi
}

# Sets the array DK_PREFIX to the command words that run a program under daxkit. Every form execs, so a
# server started as `"${DK_PREFIX[@]}" server &` has $! == the server's pid (a trap can stop it).
dk_prefix() {
    [ -n "$_DK_HOW" ] || dk_fail "dk_prefix before dk_progs_need_daxkit"
    case $_DK_HOW in
    kernel) DK_PREFIX=(env) ;;
    launcher)
        DK_PREFIX=("$DAXKIT_BUILD/bin/daxkit" run --mode "$DK_PROGS_MODE" --dir "$D")
        [ -n "$DK_PROGS_APPEND" ] && DK_PREFIX+=(--append "$DK_PROGS_APPEND")
        DK_PREFIX+=(--) ;;
    preload)
        DK_PREFIX=(env "LD_PRELOAD=$DAXKIT_BUILD/lib/libdaxkit.so${LD_PRELOAD:+:$LD_PRELOAD}" "DAXKIT_DIR=$D"
                   "DAXKIT_MODE=$DK_PROGS_MODE")
        [ -n "$DK_PROGS_APPEND" ] && DK_PREFIX+=("DAXKIT_APPEND=$DK_PROGS_APPEND") ;;
    esac
    return 0
}
DK_PREFIX=()

dkrun() {
    dk_prefix
    "${DK_PREFIX[@]}" "$@"
}

# MEDIUM [SIZE]: mounts it and makes $K (kernel runs) and $D (daxkit-managed) on it.
dk_progs_setup() {
    local medium=${1:?medium}
    dk_need_root
    dk_progs_need_daxkit
    dk_media_mount "$medium" "${2:-}" >/dev/null
    K=$DK_MNT/kernel
    D=$DK_MNT/daxkit
    mkdir -p "$K" "$D" || dk_fail "mkdir on $DK_MNT failed"
    dk_prefix
    echo "medium $medium at $DK_MNT; daxkit mode $DK_PROGS_MODE${DK_PROGS_APPEND:+, append $DK_PROGS_APPEND} via $_DK_HOW"
}

dk_free_port() {
    local p i
    for i in $(seq 1 50); do
        # Below the ephemeral range (32768+), so client sockets in TIME_WAIT never hold it.
        p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 12000 ))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    dk_fail "no free TCP port found on 127.0.0.1"
}

# A digest of a tree that ignores timestamps and directory sizes (they differ between file systems):
# relative path, type, permission bits, symlink target, file content hash. Names in $DK_TREE_EXCLUDE
# (e.g. .git) are left out.
dk_tree_sum() {
    (cd "$1" && find . -mindepth 1 -name "${DK_TREE_EXCLUDE:-/}" -prune -o -printf '%p %y %m %l\n' | LC_ALL=C sort &&
        find . -name "${DK_TREE_EXCLUDE:-/}" -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) |
        sha256sum | cut -c1-32
}

# Compares two values; fails the test with a message naming what differed.
dk_expect_eq() {  # WHAT KERNEL DAXKIT
    if [ "$2" != "$3" ]; then
        dk_fail "$1 differs: kernel '$2' vs daxkit '$3'"
    fi
    echo "ok: $1 identical (${2:0:60})"
}
