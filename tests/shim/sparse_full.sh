#!/usr/bin/env bash
# Description: a sparse file (sized by ftruncate) on a small tmpfs, under each mode: reading its holes
# allocates nothing (the kernel's read does not; a populated mapping of a sparse tmpfs file used to allocate
# every hole in it), writes far apart into its holes land, and filling it from the start until the medium
# is full ends in the kernel's ENOSPC with every acknowledged page intact -- never a SIGBUS from a mapped
# store into a hole the medium cannot fill (review 8, finding 10; src/upath/holes.c).
# Usage: sparse_full.sh MEDIUM. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
medium=${1:?MEDIUM (tmpfs|hugetmpfs)}
lib=$(dk_lib) || exit 1
dk_need_python
dk_managed_dir "$medium" 24M >/dev/null
dir=$DK_DIR
fails=0
for cfg in kernel "DAXKIT_MODE=posix" "DAXKIT_MODE=sync" "DAXKIT_MODE=strict DAXKIT_STRICT_LOG_BYTES=1M"; do
    rm -rf "$dir"/* "$dir"/.daxkit
    pre=()
    [ "$cfg" = kernel ] || pre=(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_STAGING_BYTES=2M DAXKIT_STAGING_FILES=1 $cfg)
    errf=$(mktemp) # the library's messages apart: a line of them inside a result line broke its grep
    out=$("${pre[@]}" python3 - "$dir" <<'PY' 2>"$errf"
import errno, os, sys
d = sys.argv[1]
MiB = 1 << 20
# 1. holes read as zeros and stay holes
fd = os.open(d + "/holes", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.ftruncate(fd, 256 * MiB)
for rep in range(3):
    for off in range(0, 256 * MiB, 4 * MiB):
        if os.pread(fd, 4096, off) != bytes(4096): print("hole at %d read non-zero" % off); sys.exit(1)
print("holes_blocks %d" % os.fstat(fd).st_blocks)
os.close(fd)
os.unlink(d + "/holes")
# 2. writes far apart into the holes of a sized file
fd = os.open(d + "/img", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.ftruncate(fd, 64 * MiB)
far = [40 * MiB + 4096, 8 * MiB, 63 * MiB]
for i, off in enumerate(far * 3):
    if os.pwrite(fd, bytes([65 + i % 3]) * 4096, off) != 4096: print("short far write"); sys.exit(1)
for i, off in enumerate(far):
    if os.pread(fd, 4096, off) != bytes([65 + i]) * 4096: print("far write %d lost" % off); sys.exit(1)
# 3. filled from the start until the medium is full
n = 0
while n < 16384:
    page = (b"%08d" % n) * 512
    try:
        w = os.pwrite(fd, page, n * 4096)
        if w != 4096: print("short write %d" % w); break
    except OSError as e:
        print("error %s after %d pages" % (errno.errorcode.get(e.errno, e.errno), n)); break
    n += 1
good = all(os.pread(fd, 4096, i * 4096) == (b"%08d" % i) * 512 for i in range(n) if i * 4096 not in far)
print("acknowledged %d intact %s" % (n, good))
os.close(fd)
os.unlink(d + "/img")
# 4. pages allocated past the end (fallocate KEEP_SIZE) must not pass for the holes' storage (review 9, 7)
fd = os.open(d + "/past", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.pwrite(fd, b"p" * 4096, 0)
os.ftruncate(fd, 20 * MiB)
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
if libc.fallocate(fd, 1, ctypes.c_long(20 * MiB), ctypes.c_long(8 * MiB)) != 0:  # FALLOC_FL_KEEP_SIZE
    print("no KEEP_SIZE fallocate"); sys.exit(1)
m = 1
while m < 5120:
    try:
        if os.pwrite(fd, b"q" * 4096, m * 4096) != 4096: print("short past write"); break
    except OSError as e:
        print("past: error %s after %d pages" % (errno.errorcode.get(e.errno, e.errno), m)); break
    m += 1
os.close(fd)
PY
)
    rc=$?
    echo "$cfg: exit $rc: $(printf '%s' "$out" | tr '\n' ' ')"
    [ -s "$errf" ] && sed 's/^/  stderr: /' "$errf"
    rm -f "$errf"
    if [ $rc -ne 0 ]; then echo "FAIL: $cfg: the program died or failed (exit $rc; 135 = SIGBUS)"; fails=1; continue; fi
    grep -q "^holes_blocks 0$" <<<"$out" || { echo "FAIL: $cfg: reading holes allocated them"; fails=1; }
    grep -Eq "error E(NOSPC|NOMEM)" <<<"$out" || { echo "FAIL: $cfg: no ENOSPC (or ENOMEM: memory short)"; fails=1; }
    grep -q "^acknowledged .* intact True$" <<<"$out" || { echo "FAIL: $cfg: a written page is wrong"; fails=1; }
    grep -Eq "^past: error E(NOSPC|NOMEM)" <<<"$out" || { echo "FAIL: $cfg: no ENOSPC past preallocated pages"; fails=1; }
done
[ $fails -eq 0 ] || dk_fail "a sparse file on a full $medium did not behave as with the kernel (above)"
echo "ok: holes read as zeros without allocation, far writes land, the fill ends in ENOSPC with every page intact"
