#!/usr/bin/env bash
# Description: a file that outgrows the 512 GiB daxkit maps is handed to the kernel cleanly, in every mode
# (review 9, finding 24: sync and strict took a write at 32 TiB and then answered EFBIG to every read and
# overwrite of the file through that descriptor). On MEDIUM (ARGV[1]: tmpfs|hugetmpfs|xfs), for posix,
# sync and strict:
#   1. a mapped 4 KiB file written with write(), then pwrite 10 B at 32 TiB (a sparse VM image, fio): the
#      overwrite, read, write() at the descriptor's offset (which must have been handed to the kernel: 4096)
#      and an append through a second O_APPEND descriptor all give the kernel's answers; another process
#      without the library reads the same file; strict: SIGKILL, `daxkit recover`, still that file;
#   2. another process grows the mapped file past 512 GiB: a read there returns its bytes (not EOF), an
#      overwrite and an append succeed.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
medium=${1:?usage: write_past_mapping.sh MEDIUM}
lib=$(dk_lib) || exit 1
daxkit=$(dk_cli) || exit 1
dk_need_python
dk_managed_dir "$medium" 512M >/dev/null
dir=$DK_DIR
fails=0
T=$((32 << 40))

# The file as the kernel shows it, read without the library: size, and the bytes at 0, 4096, 4106, 12288, T.
expect="$((T + 20)) aaaa WWWW zzzz aaaa yyyyyyyyyyAAAAAAAAAA"
kernel_view() {
    env -u LD_PRELOAD python3 - "$1" "$T" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); T = int(sys.argv[2])
r = lambda n, o: os.pread(fd, n, o).decode(errors="replace")
print(os.fstat(fd).st_size, r(4, 0), r(4, 4096), r(4, 4106), r(4, 12288), r(20, T))
PY
}

for mode in posix sync strict; do
    rm -rf "$dir"/* "$dir"/.daxkit
    out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=$mode DAXKIT_PERSIST=flush python3 - "$dir/big" "$T" $mode <<'PY'
import os, signal, sys
p, T, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"a" * 16384); os.lseek(fd, 4096, os.SEEK_SET)   # the descriptor's offset: 4096
for _ in range(40): os.pread(fd, 16, 0)                       # mapped
def t(name, f, want):
    try: got = f()
    except OSError as e: got = e.strerror
    if got != want: print("FAIL: %s: %s gives %r (the kernel's answer: %r)" % (mode, name, got, want))
t("pwrite 10 B at 32 TiB", lambda: os.pwrite(fd, b"y" * 10, T), 10)
t("pwrite 8 KiB at 4 KiB", lambda: os.pwrite(fd, b"z" * 8192, 4096), 8192)
t("pread 100 B at 0", lambda: os.pread(fd, 100, 0), b"a" * 100)
t("write() 10 B at the offset", lambda: os.write(fd, b"W" * 10), 10)
t("the offset after it", lambda: os.lseek(fd, 0, os.SEEK_CUR), 4106)
t("append 10 B", lambda: os.write(os.open(p, os.O_WRONLY | os.O_APPEND), b"A" * 10), 10)
t("pread 20 B at 32 TiB", lambda: os.pread(fd, 20, T), b"y" * 10 + b"A" * 10)
t("read() 4 B at the offset", lambda: os.read(fd, 4), b"zzzz")
if mode == "strict": os.kill(os.getpid(), signal.SIGKILL)
os.close(fd)
PY
)
    [ -n "$out" ] && { echo "$out"; fails=1; }
    if [ $mode = strict ]; then
        "$daxkit" recover "$dir" >/dev/null || { echo "FAIL: daxkit recover $dir failed"; fails=1; }
    fi
    got=$(kernel_view "$dir/big")
    if [ "$got" = "$expect" ]; then echo "ok: $mode: a write at 32 TiB hands the file to the kernel$([ $mode = strict ] && echo "; a crash and recovery leave it")"
    else echo "FAIL: $mode: the file reads '$got' without the library (want '$expect')"; fails=1; fi

    # 2. Another process grows the mapped file past 512 GiB.
    rm -rf "$dir"/* "$dir"/.daxkit
    out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=$mode DAXKIT_PERSIST=flush python3 - "$dir/grown" "$T" $mode <<'PY'
import os, subprocess, sys
p, T, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"a" * 16384); os.fsync(fd)
for _ in range(40): os.pread(fd, 16, 0)                       # mapped
subprocess.run(["env", "-u", "LD_PRELOAD", "python3", "-c",
                "import os,sys; f=os.open(sys.argv[1], os.O_WRONLY); os.pwrite(f, b'g'*10, int(sys.argv[2]))", p, str(T)],
               check=True)
def t(name, f, want):
    try: got = f()
    except OSError as e: got = e.strerror
    if got != want: print("FAIL: %s: grown by another process: %s gives %r (the kernel's answer: %r)" % (mode, name, got, want))
t("pread 10 B at 32 TiB", lambda: os.pread(fd, 10, T), b"g" * 10)
t("pwrite 8 KiB at 4 KiB", lambda: os.pwrite(fd, b"z" * 8192, 4096), 8192)
t("append 10 B", lambda: os.write(os.open(p, os.O_WRONLY | os.O_APPEND), b"A" * 10), 10)
t("pread 20 B at 32 TiB", lambda: os.pread(fd, 20, T), b"g" * 10 + b"A" * 10)
t("pread 4 B at 4 KiB", lambda: os.pread(fd, 4, 4096), b"zzzz")
os.close(fd)
PY
)
    if [ -n "$out" ]; then echo "$out"; fails=1; else echo "ok: $mode: a file another process grew past 512 GiB reads and writes as the kernel's"; fi
done
[ $fails -eq 0 ] || dk_fail "a file past the 512 GiB daxkit maps is not the kernel's (above)"
echo "ok: all modes"
