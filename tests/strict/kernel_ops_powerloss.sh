#!/usr/bin/env bash
# Description: what sync and strict modes hand to the kernel is durable when the call returns, as their
# writes are (review 11, findings 9 and 11). One process per mode does each operation once and ends without
# fsync; then the machine loses power, emulated by XFS's shutdown without a log flush (xfs_io -x -c shutdown)
# and a remount, and recovery runs. Want, in sync and strict modes: the 1 MiB of 'N' that copy_file_range,
# sendfile and splice copied over a synced 1 MiB of 'O' (they were gone: 0 bytes), the 2 MiB size that
# fallocate and posix_fallocate gave a 1 MiB file (fallocate's was gone); in strict mode also the names made
# by link, linkat, mkdir, symlink and mknod (they were gone; create, unlink and rename were durable already).
# Controls in the same run: a pwrite of 'N' and an ftruncate to 2 MiB (durable before the change), a creat.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_root
dk_need_python
dk_need_cmd xfs_io mkfs.xfs
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
img=$(mktemp /dev/shm/dk-kops.XXXXXX) && truncate -s 512M "$img" || dk_skip "no image file"
loop=$(losetup --find --show "$img" 2>/dev/null) || { rm -f "$img"; dk_skip "no loop device"; }
mnt=$(mktemp -d)
dk_on_exit "umount -l '$mnt' 2>/dev/null; losetup -d '$loop'; rm -f '$img'; rmdir '$mnt'"
mkfs.xfs -q -f "$loop" && mount "$loop" "$mnt" || dk_fail "mkfs/mount of XFS on $loop"
m=$mnt/m
MIB=1048576
copies="pwrite copy_file_range sendfile splice"
sizes="ftruncate fallocate posix_fallocate"
names="creat link linkat mkdir symlink mknod"

# The operations, in one process (argv: dir mode); every call's result is checked here.
prog='
import ctypes, os, stat, sys
d, mode = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
src = os.open(d + "/src", os.O_RDONLY)
for how in "'"$copies"'".split():
    out = os.open(d + "/" + how, os.O_RDWR)
    if how == "pwrite": n = os.pwrite(out, os.pread(src, '$MIB', 0), 0)
    elif how == "copy_file_range": n = os.copy_file_range(src, out, '$MIB', 0, 0)
    elif how == "sendfile": n = os.sendfile(out, src, 0, '$MIB')
    else:
        n = 0
        while n < '$MIB':
            r, w = os.pipe(); os.write(w, b"N" * 65536); os.close(w)
            while True:
                k = os.splice(r, out, 65536, offset_dst=n)
                if k == 0: break
                n += k
            os.close(r)
    assert n == '$MIB', (how, n)
for how in "'"$sizes"'".split():
    fd = os.open(d + "/" + how, os.O_RDWR)
    if how == "ftruncate": os.ftruncate(fd, 2 * '$MIB')
    elif how == "posix_fallocate": os.posix_fallocate(fd, 0, 2 * '$MIB')
    else:
        libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
        assert libc.fallocate(fd, 0, 0, 2 * '$MIB') == 0, os.strerror(ctypes.get_errno())
if mode == "strict":
    os.close(os.open(d + "/n_creat", os.O_CREAT | os.O_WRONLY, 0o644))
    os.link(d + "/base", d + "/n_link")
    os.link("base", "n_linkat", src_dir_fd=os.open(d, os.O_RDONLY), dst_dir_fd=os.open(d, os.O_RDONLY))
    os.mkdir(d + "/n_mkdir")
    os.symlink("base", d + "/n_symlink")
    os.mknod(d + "/n_mknod", 0o644 | stat.S_IFIFO)
print("done")
'

fail=0
for mode in sync strict; do
    rm -rf "$m" && mkdir -p "$m"
    head -c $MIB /dev/zero | tr '\0' N > "$m/src"
    for f in $copies $sizes; do head -c $MIB /dev/zero | tr '\0' O > "$m/$f"; done
    echo base > "$m/base"
    env LD_PRELOAD="$lib" DAXKIT_DIR="$m" DAXKIT_MODE=$mode /bin/true # the strict area exists first
    sync
    out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$m" DAXKIT_MODE=$mode python3 -c "$prog" "$m" $mode 2>&1)
    [ "$(tail -1 <<<"$out")" = done ] || dk_fail "$mode: the operations failed: $out"
    xfs_io -x -c shutdown "$mnt" || dk_skip "xfs_io shutdown refused"
    umount "$mnt" && mount "$loop" "$mnt" || dk_fail "remount after the emulated power loss"
    "$cli" recover "$m" > /dev/null
    for f in $copies; do
        n=$(tr -cd N < "$m/$f" | wc -c)
        echo "$mode $f: $n of $MIB bytes 'N' after the power loss"
        [ "$n" -ge $MIB ] || { echo "FAIL: $mode $f: the copied bytes were not durable"; fail=1; }
    done
    for f in $sizes; do
        s=$(stat -c %s "$m/$f")
        echo "$mode $f: size $s after the power loss"
        [ "$s" = $((2 * MIB)) ] || { echo "FAIL: $mode $f: the size change was not durable ($s)"; fail=1; }
    done
    [ $mode = strict ] || continue
    for f in $names; do
        if [ -e "$m/n_$f" ] || [ -L "$m/n_$f" ]; then echo "$mode $f: the name exists after the power loss"
        else echo "FAIL: $mode $f: the name is gone after the power loss"; fail=1; fi
    done
done
exit $fail
