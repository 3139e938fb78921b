#!/usr/bin/env bash
# Description: three strict-mode behaviours that session 7's review fixed and no other test pinned
# (huge tmpfs, DAXKIT_PERSIST=flush):
#   - default apply: a 4 KiB overwrite the program never fsyncs must not come back over a later write by
#     another process (the kernel's answer: the later write wins) -- fails if the default apply waits;
#   - an ftruncate past the 512 GiB daxkit maps is the kernel's in every mode (sparse, as the kernel makes
#     it), and in strict mode a crash and `daxkit recover` after it leave exactly the kernel's file;
#   - strict x DAXKIT_ATOMIC_MMAP: with the staged overwrites waiting (DAXKIT_STRICT_APPLY=checkpoint), a
#     program's mapping of the file shows its own write() at once, both with the shmem shadow and without.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
lib=$(dk_lib) || exit 1
daxkit=$(dk_cli) || exit 1
dk_need_python
dk_managed_dir hugetmpfs 1G >/dev/null
dir=$DK_DIR
fails=0
strict() { env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_PERSIST=flush "$@"; }

# 1. The later writer wins (review 7, finding 30).
rm -rf "$dir"/* "$dir"/.daxkit
first=$(strict python3 - "$dir/lost" <<'PY'
import os, subprocess, sys
p = sys.argv[1]
fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"a" * 8192); os.fsync(fd)
for _ in range(20): os.pread(fd, 16, 0)
# The later writer is started first: a fork or exec is a publish point, the write below must not meet one.
other = subprocess.Popen(["env", "-u", "LD_PRELOAD", "python3", "-c",
    "import os,sys; sys.stdin.read(1); f=os.open(sys.argv[1], os.O_WRONLY); os.pwrite(f, b'CCCC', 0); os.close(f)",
    p], stdin=subprocess.PIPE)
os.pwrite(fd, b"B" * 4096, 0)                       # acknowledged, never fsynced
other.stdin.write(b"g"); other.stdin.close()
if other.wait() != 0: sys.exit(2)
os.close(fd)                                        # strict's close: a checkpoint
print(open(p, "rb").read(1).decode())
PY
)
if [ "$first" = C ]; then echo "ok: a later writer's bytes survive the strict writer's close"
else echo "FAIL: first byte '$first' after the strict writer's close; the kernel's answer is 'C' (the later write)"; fails=1; fi

# 2. A size past the 512 GiB daxkit maps is the kernel's (review 8, finding 3: it was EFBIG in every mode;
# review 7's finding 20 refused it before the log): ftruncate to 600 GiB succeeds as on the kernel path
# (sparse), in every mode; in strict mode it is not logged, so a crash and `daxkit recover` leave exactly
# the kernel's file (600 GiB, the first 4 KiB intact). RLIMIT_FSIZE's refusal cannot reach the log any
# more: a program that lowers the limit hands its strict files to the kernel.
for mode in posix sync strict; do
    rm -rf "$dir"/* "$dir"/.daxkit
    env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=$mode DAXKIT_PERSIST=flush python3 - "$dir/ftr" $mode <<'PY'
import os, signal, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"a" * 4096); os.fsync(fd)
for _ in range(20): os.pread(fd, 16, 0)                # mapped
try:
    os.ftruncate(fd, 600 << 30)
except OSError as e:
    print("FAIL: %s: ftruncate to 600 GiB failed (%s); the kernel makes the sparse file" % (sys.argv[2], e)); sys.exit(3)
os.pwrite(fd, b"z", (600 << 30) - 1)
if os.fstat(fd).st_size != 600 << 30 or os.pread(fd, 4096, 0) != b"a" * 4096 or os.pread(fd, 1, (600 << 30) - 1) != b"z":
    print("FAIL: %s: the 600 GiB file does not read back as written" % sys.argv[2]); sys.exit(3)
if sys.argv[2] == "strict": os.kill(os.getpid(), signal.SIGKILL)
os.close(fd)
PY
    [ $? -eq 3 ] && fails=1
    [ $mode = strict ] && { "$daxkit" recover "$dir" >/dev/null || { echo "FAIL: daxkit recover $dir failed"; fails=1; }; }
    size=$(stat -c %s "$dir/ftr")
    head=$(head -c 4096 "$dir/ftr" | tr -d a | wc -c)
    if [ "$size" = $((600 << 30)) ] && [ "$head" = 0 ]; then echo "ok: $mode: ftruncate to 600 GiB is the kernel's$([ $mode = strict ] && echo ", after a crash and recovery")"
    else echo "FAIL: $mode: size $size, $head bytes of the first 4 KiB changed (want 644245094400 and 0)"; fails=1; fi
    rm -f "$dir/ftr"
done

# 3. The program's mapping shows its own write under DAXKIT_ATOMIC_MMAP (review 7, finding 22).
for shadow in auto always; do
    rm -rf "$dir"/* "$dir"/.daxkit
    got=$(strict DAXKIT_STRICT_APPLY=checkpoint DAXKIT_ATOMIC_MMAP='*.dat' DAXKIT_ATOMIC_MMAP_SHADOW=$shadow \
        python3 - "$dir/am.dat" <<'PY'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"a" * 65536); os.fsync(fd)
for _ in range(20): os.pread(fd, 16, 0)
m = mmap.mmap(fd, 65536)
_ = m[8192]                                          # the page touched
os.pwrite(fd, b"W" * 4096, 8192)
before = chr(m[8192])
m[100] = ord("x"); m.flush()                         # an msync of another page
print(before + chr(m[8192]) + os.pread(fd, 1, 8192).decode())
m.close(); os.close(fd)
PY
)
    if [ "$got" = WWW ]; then echo "ok: shadow=$shadow: the mapping shows the program's write before and after an msync"
    else echo "FAIL: shadow=$shadow: mapping/after msync/read() show '$got' (want 'WWW')"; fails=1; fi
done
[ $fails -eq 0 ] || dk_fail "strict mode lost a behaviour session 7's review fixed (above)"
echo "ok: all three"
