#!/usr/bin/env bash
# Description: git under daxkit on a source tree: init, add, commit, a second commit with edits, deletes and
# renames, gc (pack files), clone; fixed author/committer dates make commit ids deterministic, so the kernel
# and daxkit runs must produce the same commit id, the same checked-out tree, and git fsck --full --strict
# must pass on the daxkit repository read through the kernel and under daxkit.
# Usage: git.sh MEDIUM
set -euo pipefail
. "$(dirname "$0")/lib.sh"
dk_need_cmd git sha256sum
SRC=${SRC_TREE:-/usr/include/linux}
[ -d "$SRC" ] || dk_skip "source tree $SRC missing (linux-libc-dev); set SRC_TREE"
dk_progs_setup "${1:?medium}"
export GIT_CONFIG_NOSYSTEM=1 HOME=$DK_MNT GIT_AUTHOR_NAME=daxkit GIT_AUTHOR_EMAIL=t@daxkit.invalid \
    GIT_COMMITTER_NAME=daxkit GIT_COMMITTER_EMAIL=t@daxkit.invalid GIT_AUTHOR_DATE='2024-01-01T00:00:00Z' \
    GIT_COMMITTER_DATE='2024-01-01T00:00:00Z'
git config --global init.defaultBranch main
git config --global gc.auto 0

run() {  # DIR [PREFIX...]
    local dir=$1 r
    shift
    r=$dir/repo
    "$@" cp -a "$SRC" "$r"
    "$@" git -C "$r" init -q
    "$@" git -C "$r" add -A
    "$@" git -C "$r" commit -q -m "import"
    # Edits: append to every 10th file, delete every 50th, rename every 70th (few processes: the list
    # of files is computed once, then one git rm, one appending shell, one git mv per rename).
    (cd "$r" && git ls-files | LC_ALL=C sort) > "$dir/files"
    awk 'NR % 50 == 0 && NR % 70 != 0' "$dir/files" > "$dir/rm"
    awk 'NR % 10 == 0 && NR % 50 != 0 && NR % 70 != 0' "$dir/files" > "$dir/edit"
    (cd "$r" && xargs -a "$dir/rm" "$@" git rm -q)
    (cd "$r" && xargs -a "$dir/edit" "$@" sh -c 'for f; do echo "/* edit */" >> "$f"; done' edit)
    local f
    for f in $(awk 'NR % 70 == 0' "$dir/files"); do "$@" git -C "$r" mv "$f" "$f.renamed"; done
    "$@" git -C "$r" commit -q -a -m "edits"
    "$@" git -C "$r" gc -q
    "$@" git -C "$r" fsck --full --strict 2> "$dir/fsck.txt" || { cat "$dir/fsck.txt" >&2; dk_fail "git fsck failed in $r"; }
    "$@" git clone -q --no-hardlinks "$r" "$dir/clone"
    echo "$(git -C "$r" rev-parse HEAD) $(DK_TREE_EXCLUDE=.git dk_tree_sum "$dir/clone") $("$@" git -C "$r" status --porcelain | wc -l)"
}
k=$(run "$K")
d=$(run "$D" "${DK_PREFIX[@]}")
dk_expect_eq "commit id, clone tree, dirty files" "$k" "$d"
git -C "$D/repo" fsck --full --strict || dk_fail "git fsck (kernel) rejects the repository written under daxkit"
echo "ok: git fsck through the kernel accepts the daxkit repository"
echo "PASS"
