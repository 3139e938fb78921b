#!/usr/bin/env bash
# Description: writes the kernel serves on a managed descriptor (here: shared with a fork child) are
# fdatasync'ed before they return in sync and strict modes -- those modes' durability promise -- and not in
# posix mode (review 8, finding 15: neither logged nor synced before). Counted by pt_synced, read with
# `daxkit stats PID` while the child keeps the descriptor shared. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_need_python
dk_managed_dir "${1:-hugetmpfs}" >/dev/null
dir=$DK_DIR
fails=0
for mode in posix sync strict; do
    rm -rf "$dir"/* "$dir"/.daxkit
    got=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=$mode python3 - "$dir" "$cli" <<'PY'
import json, os, subprocess, sys
d, cli = sys.argv[1], sys.argv[2]
fd = os.open(d + "/f", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"a" * 4096); os.fsync(fd)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w); os.read(r, 1); os._exit(0)           # keeps the descriptor shared until told
os.close(r)
for i in range(10): os.pwrite(fd, b"b" * 4096, i * 4096)
c = json.loads(subprocess.run([cli, "stats", str(os.getpid())], capture_output=True, text=True).stdout)
c = c.get("counters", c)
os.write(w, b"x"); os.waitpid(pid, 0)
ok = os.pread(fd, 40960, 0) == b"b" * 40960
print(c.get("pt_synced"), c.get("passthrough"), ok)
PY
)
    read -r synced passed intact <<<"$got"
    want=10; [ $mode = posix ] && want=0
    echo "$mode: $passed pass-through calls, $synced fdatasync'ed at once (want $want), data intact: $intact"
    [ "$synced" = "$want" ] && [ "${passed:-0}" -ge 10 ] && [ "$intact" = True ] || { echo "FAIL: $mode"; fails=1; }
done
[ $fails -eq 0 ] || dk_fail "pass-through writes were not synced as the mode promises (above)"
echo "ok: sync and strict make a kernel-served write durable before it returns; posix does not"
