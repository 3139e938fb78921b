#!/usr/bin/env bash
# Description: `daxkit run` from a directory whose path has a space or ':' (review 12, finding 7): ld.so
# splits LD_PRELOAD there and ran the program without the library, exit 0 -- strict mode without its
# durability, silently. The launcher must refuse (exit 2, naming the path); from a plain path it runs the
# program with the library. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
cli=$(dk_cli) || exit 1
lib=$(dk_lib) || exit 1
tmp=$(mktemp -d) && dk_on_exit "rm -rf '$tmp'"
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
probe='grep -c libdaxkit /proc/self/maps'
for name in "daxkit r12" "daxkit:r12" plain; do
    mkdir -p "$tmp/$name/bin" "$tmp/$name/lib" "$tmp/m"
    cp "$cli" "$tmp/$name/bin/daxkit" && cp "$lib" "$tmp/$name/lib/libdaxkit.so"
    out=$(env -u LD_PRELOAD -u DAXKIT_LIB "$tmp/$name/bin/daxkit" run --mode strict --dir "$tmp/m" -- sh -c "$probe" 2>&1)
    rc=$?
    if [ "$name" = plain ]; then
        [ $rc -eq 0 ] && [ "${out##*$'\n'}" -ge 1 ] 2>/dev/null && echo "ok   '$name': the program runs with the library" ||
            bad "'$name': exit $rc, output: $out"
    else
        [ $rc -eq 2 ] && grep -q "contains a space or ':'" <<<"$out" && echo "ok   '$name': refused, exit 2" ||
            bad "'$name': exit $rc (the program ran without the library?): $out"
    fi
done
[ $fails -eq 0 ] || dk_fail "$fails check(s) failed"
echo "launcher_path.sh: daxkit run refuses a library path LD_PRELOAD cannot carry"
