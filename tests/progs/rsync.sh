#!/usr/bin/env bash
# Description: rsync under daxkit: copy a source tree into the managed directory, change some source files
# (edits in place, truncations, new files, deletions) and sync again with the delta algorithm (rsync reads
# the old file and writes a temporary one, then renames it), then --inplace updates and a --checksum
# dry run that must find nothing to do. Trees must equal the source and the kernel run.
# Usage: rsync.sh MEDIUM
set -euo pipefail
. "$(dirname "$0")/lib.sh"
dk_need_cmd rsync sha256sum
SRC=${SRC_TREE:-/usr/include/linux}
[ -d "$SRC" ] || dk_skip "source tree $SRC missing (linux-libc-dev); set SRC_TREE"
dk_progs_setup "${1:?medium}"

# A private, mutable copy of the source on the medium, outside both runs' directories.
S=$DK_MNT/src
cp -a "$SRC" "$S"
mutate() {  # round
    local i=0 f
    while read -r f; do
        i=$((i + 1))
        if [ $((i % 13)) = 0 ]; then printf 'edit %s round %s\n' "$i" "$1" >> "$f"
        elif [ $((i % 31)) = 0 ]; then truncate -s %2 "$f"
        elif [ $((i % 47)) = 0 ]; then rm -f "$f"
        elif [ $((i % 59)) = 0 ]; then head -c 5000 "$f" > "$f.new-$1"
        fi
    done < <(find "$S" -type f | LC_ALL=C sort)
}
run_round() {  # DIR OPTS [PREFIX...]
    local dir=$1 opts=$2
    shift 2
    # shellcheck disable=SC2086
    "$@" rsync -a --delete $opts "$S/" "$dir/t/" || dk_fail "rsync $opts into $dir failed"
    [ -z "$("$@" rsync -a --delete --checksum --dry-run --itemize-changes "$S/" "$dir/t/")" ] ||
        dk_fail "rsync --checksum finds differences right after syncing $dir"
    dk_tree_sum "$dir/t"
}
round=0
for opts in "" "--no-whole-file" "--no-whole-file --inplace"; do
    round=$((round + 1))
    want=$(dk_tree_sum "$S")
    k=$(run_round "$K" "$opts")
    d=$(run_round "$D" "$opts" "${DK_PREFIX[@]}")
    dk_expect_eq "round $round (rsync -a $opts): kernel tree vs source" "$want" "$k"
    dk_expect_eq "round $round (rsync -a $opts): daxkit tree" "$k" "$d"
    mutate $round
done
# A copy out of the managed directory (read under daxkit) into an unmanaged one.
dkrun rsync -a "$D/t/" "$DK_MNT/out/" || dk_fail "rsync out of $D failed"
dk_expect_eq "copy out of the daxkit tree vs the kernel tree" "$(dk_tree_sum "$K/t")" "$(dk_tree_sum "$DK_MNT/out")"
echo "PASS"
