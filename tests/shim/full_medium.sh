#!/usr/bin/env bash
# Description: a log appended and fdatasync'ed record by record until a small tmpfs (or huge tmpfs) is full
# gets the kernel's answer under every append strategy -- a write failing with ENOSPC, every acknowledged
# record in the file, the program alive -- never a SIGBUS from a store into a hole the medium cannot fill
# (the extend strategy makes its steps by ftruncate: review 8, finding 2). The stage strategy accepts the
# write the medium cannot hold into its staging and reports ENOSPC at the fdatasync (and at close); the
# extend strategy stops a huge page early (daxkit's size record takes one). Usage: full_medium.sh MEDIUM
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
medium=${1:?MEDIUM (tmpfs|hugetmpfs)}
lib=$(dk_lib) || exit 1
dk_need_cmd python3
dk_media_mount "$medium" 16M >/dev/null
dir=$DK_MNT/managed
mkdir -p "$dir"
fails=0
for cfg in kernel "DAXKIT_APPEND=stage" "DAXKIT_APPEND=extend DAXKIT_EXTEND_SYNC=keep" \
           "DAXKIT_APPEND=extend DAXKIT_EXTEND_SYNC=cut" "DAXKIT_APPEND=auto"; do
    rm -rf "$dir"/* "$dir"/.daxkit
    pre=()
    [ "$cfg" = kernel ] || pre=(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" $cfg)
    out=$("${pre[@]}" python3 - "$dir/log" <<'PY' 2>&1
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
n = 0
while True:
    rec = (b"%08d" % n) * 512                          # 4 KiB, numbered
    try:
        w = os.write(fd, rec)
        if w != len(rec): print("short write %d" % w); break
        os.fdatasync(fd)
    except OSError as e:
        print("error %s after %d records" % (errno.errorcode.get(e.errno, e.errno), n)); break
    n += 1
try:
    os.close(fd)
except OSError as e:                                   # stage: the write the fdatasync refused is still staged
    print("close: %s" % errno.errorcode.get(e.errno, e.errno))
data = open(sys.argv[1], "rb").read()
good = all(data[i * 4096:(i + 1) * 4096] == (b"%08d" % i) * 512 for i in range(n))
print("acknowledged %d size %d intact %s" % (n, len(data), good))
PY
)
    rc=$?
    echo "$cfg: exit $rc: $(printf '%s' "$out" | tr '\n' ' ')"
    if [ $rc -ne 0 ]; then echo "FAIL: $cfg: the program died (exit $rc; 135 = SIGBUS)"; fails=1; continue; fi
    grep -q "error ENOSPC" <<<"$out" || { echo "FAIL: $cfg: no ENOSPC"; fails=1; }
    grep -q "^acknowledged .* intact True$" <<<"$out" ||
        { echo "FAIL: $cfg: an acknowledged record is missing or wrong"; fails=1; }
done
[ $fails -eq 0 ] || dk_fail "a full $medium did not give the kernel's answer under some append strategy (above)"
echo "ok: every strategy ends with ENOSPC and keeps every acknowledged record"
