#!/usr/bin/env bash
# Description: tar under daxkit: create an archive of a source tree (deterministic: sorted, fixed mtime and
# owner), extract it, re-create an archive from the extracted tree, and extract with --append'ed members;
# archives must be byte-identical to the kernel run's, extracted trees identical to the source, and the
# extracted files' mtimes those of the archive (tar sets them by futimens before its close: a publish at
# the close dated every file "now").
# Usage: tar.sh MEDIUM
set -euo pipefail
. "$(dirname "$0")/lib.sh"
dk_need_cmd tar sha256sum
SRC=${SRC_TREE:-/usr/include/linux}
[ -d "$SRC" ] || dk_skip "source tree $SRC missing (linux-libc-dev); set SRC_TREE"
dk_progs_setup "${1:?medium}"
TAROPTS=(--sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu)

run() {  # DIR [PREFIX...]
    local dir=$1
    shift
    "$@" tar -cf "$dir/a.tar" "${TAROPTS[@]}" -C "$(dirname "$SRC")" "$(basename "$SRC")"
    mkdir -p "$dir/x" "$dir/y"
    "$@" tar -xf "$dir/a.tar" -C "$dir/x"
    "$@" tar -cf "$dir/b.tar" "${TAROPTS[@]}" -C "$dir/x" .
    "$@" tar -rf "$dir/b.tar" "${TAROPTS[@]}" -C "$dir/x" "$(basename "$SRC")/a.out.h"  # append to the archive
    "$@" tar -xf "$dir/b.tar" -C "$dir/y"
    "$@" tar -czf "$dir/c.tgz" "${TAROPTS[@]}" -C "$dir/x" .
    echo "$(sha256sum < "$dir/a.tar" | cut -c1-16) $(sha256sum < "$dir/b.tar" | cut -c1-16)" \
         "$("$@" tar -tzvf "$dir/c.tgz" | sha256sum | cut -c1-16)" \
         "$(dk_tree_sum "$dir/x/$(basename "$SRC")") $(dk_tree_sum "$dir/y/$(basename "$SRC")")" \
         "$(cd "$dir/x" && find . -type f -printf '%T@ %p\n' | LC_ALL=C sort | sha256sum | cut -c1-16)"
}
src=$(dk_tree_sum "$SRC")
k=$(run "$K")
d=$(run "$D" "${DK_PREFIX[@]}")
dk_expect_eq "archives and extracted trees" "$k" "$d"
dk_expect_eq "extracted tree vs source" "$src" "$(echo "$d" | cut -d' ' -f4)"
echo "PASS"
