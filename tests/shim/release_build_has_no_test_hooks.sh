#!/usr/bin/env bash
# Description: `make release`'s configuration (DAXKIT_TEST_BUILD=OFF) builds a library that ignores the
# test-only variables -- DAXKIT_TEST_CRASH=SITE:N does not kill a program, count mode writes nothing -- and
# `daxkit doctor` says which kind of build it is (review 10, finding 11: every build honoured them).
# The test build is the control: the same command is killed at the crash point there.
set -u
B=${DAXKIT_BUILD:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
R=$B/release-check
T=$(mktemp -d /tmp/release_hooks.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# python3's interpreter itself under the library, not a pyenv shim (tests/harness/media.sh dk_python)
py=$(python3 -c 'import sys; print(sys.executable)') || fail "python3 not found"

cmake -S "$SRC" -B "$R" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAXKIT_TEST_BUILD=OFF >"$T/cmake.log" 2>&1 \
  || fail "configure the release build: $(tail -5 "$T/cmake.log")"
ninja -C "$R" daxkit daxkit-cli >"$T/ninja.log" 2>&1 || fail "build the release library: $(tail -5 "$T/ninja.log")"

mkdir -p "$T/d"
# BUILD [SPEC]: a program under `daxkit run` writes a managed file (on fd 3: a managed file on fds 0-2 is
# kernel-served) with a crash point armed at its first write.
write_hi() {
  DAXKIT_TEST_CRASH=${2:-upath.write.begin:1} "$1/bin/daxkit" run --dir "$T/d" -- "$py" -c \
    "import os; fd = os.open('$T/d/f', os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644); os.write(fd, b'hi'); os.close(fd)" 2>"$T/err"
}
run_write() { write_hi "$1"; }
run_write "$B"; rc=$?
[ $rc = 137 ] || fail "control: the test build was not killed at upath.write.begin:1 (exit $rc: $(cat "$T/err"))"
rm -f "$T/d/f"
run_write "$R"; rc=$?
[ $rc = 0 ] || fail "release build: exit $rc with DAXKIT_TEST_CRASH set (want 0, the variable ignored): $(cat "$T/err")"
[ "$(cat "$T/d/f")" = hi ] || fail "release build: the file holds '$(cat "$T/d/f")', want 'hi'"
write_hi "$B" "count:$T/counts-test" || fail "test build, count mode: exit $?"
grep -q "upath.write.begin" "$T/counts-test" 2>/dev/null || fail "control: the test build counted no upath.write.begin"
write_hi "$R" "count:$T/counts" || fail "release build, count mode: exit $?"
[ -e "$T/counts" ] && fail "release build wrote crash point counts to $T/counts"
"$R/bin/daxkit" doctor --quick "$T/d" | grep -q "^build *release" || fail "release doctor does not say 'build release'"
"$B/bin/daxkit" doctor --quick "$T/d" | grep -q "^build *test" || fail "test-build doctor does not say 'build test'"
"$R/bin/daxkit" doctor --quick --json "$T/d" | grep -q '"build": "release"' || fail "doctor --json has no build kind"
echo PASS
