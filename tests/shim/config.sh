#!/usr/bin/env bash
# Description: configuration handling of libdaxkit.so and `daxkit run`/`daxkit config` on MEDIUM (ARGV[1]):
#  - a bad value of each option type (enum, bool, uint, size out of bounds, append policy) prints a message
#    naming the variable and the accepted values, and the program still runs correctly, unaccelerated
#    (no stats file for it, data exact);
#  - an unknown DAXKIT_FOO is reported by name (and the program runs correctly);
#  - DAXKIT_STRICT_CONFIG=1: `daxkit run` refuses to start the command; preloaded directly, managed opens
#    fail with EINVAL;
#  - `daxkit config --doc` lists every option of src/common/options.def;
#  - DAXKIT_VERBOSE=1 prints a banner with exactly the non-default values;
#  - a good configuration is served (stats file present, user-space reads/appends counted).
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
medium=${1:-hugetmpfs}
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
probe=$(dk_test_bin shim_probe) || exit 1
dk_managed_dir "$medium" >/dev/null
dir=$DK_DIR
tmp=$(mktemp -d) && dk_on_exit "rm -rf '$tmp'"
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# baseline: served
out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" "$probe" "$dir" 2>&1) || bad "probe fails with a good configuration: $out"
grep -q "^active 1" <<< "$out" || bad "good configuration: the library is not active: $out"
grep -qE "^served reads [1-9][0-9]* appends [1-9]" <<< "$out" || bad "good configuration: nothing served in user space: $out"

# bad values: VAR=VALUE  pattern-the-message-must-contain (accepted values)
while read -r var value accepted; do
    [ -n "$var" ] || continue
    out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" "$var=$value" "$probe" "$dir" 2>&1)
    rc=$?
    [ $rc -eq 0 ] || bad "$var=$value: the program did not run correctly (exit $rc): $out"
    grep -q "DAXKIT_$var\|$var" <<< "$out" || true
    grep -v "^active\|^served\|^shim_check" <<< "$out" | grep "$var" >/dev/null || bad "$var=$value: no message naming $var: $out"
    grep -qF -- "$accepted" <<< "$out" || bad "$var=$value: the message does not give the accepted values ('$accepted'): $out"
    grep -q "^active 0" <<< "$out" || bad "$var=$value: the program ran accelerated despite the bad value: $out"
    echo "ok: $var=$value -> $(echo "$out" | grep -m1 "$var")"
done <<'LIST'
DAXKIT_MODE bogus posix|sync|strict
DAXKIT_POPULATE maybe 0 or 1
DAXKIT_STAGING_FILES 999 an integer from 1 to 64
DAXKIT_STAGING_FILES 0x10 an integer from 1 to 64
DAXKIT_STAGING_FILES +8 an integer from 1 to 64
DAXKIT_STAGING_BYTES 0x4000000 a size from
DAXKIT_STAGING_BYTES 1K a size from
DAXKIT_NT_MIN_BYTES 12Q a size from
DAXKIT_PERSIST sometimes auto|flush
DAXKIT_APPEND sideways stage
LIST

# unknown variable
out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_FOO=1 "$probe" "$dir" 2>&1) || bad "DAXKIT_FOO=1: the program failed: $out"
grep -q "DAXKIT_FOO" <<< "$out" || bad "DAXKIT_FOO=1 is not reported: $out"
echo "ok: DAXKIT_FOO -> $(echo "$out" | grep -m1 DAXKIT_FOO)"

# strict: daxkit run refuses; preloaded directly, managed opens fail with EINVAL
rm -f "$tmp/ran"
out=$(env DAXKIT_STRICT_CONFIG=1 DAXKIT_MODE=bogus "$cli" run --dir "$dir" -- touch "$tmp/ran" 2>&1)
rc=$?
[ $rc -ne 0 ] || bad "DAXKIT_STRICT_CONFIG=1 with DAXKIT_MODE=bogus: daxkit run exited 0"
[ ! -e "$tmp/ran" ] || bad "DAXKIT_STRICT_CONFIG=1: daxkit run started the command despite a bad option"
grep -q "MODE" <<< "$out" || bad "DAXKIT_STRICT_CONFIG=1: daxkit run's refusal does not name the variable: $out"
echo "ok: strict daxkit run refuses (exit $rc): $(echo "$out" | head -1)"
out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_STRICT_CONFIG=1 DAXKIT_MODE=bogus "$probe" "$dir" 2>&1)
grep -q "^open errno 22" <<< "$out" || bad "DAXKIT_STRICT_CONFIG=1 preloaded: managed open did not fail with EINVAL: $out"
# without strict, daxkit run warns and runs
rm -f "$tmp/ran"
env DAXKIT_MODE=bogus "$cli" run --dir "$dir" -- touch "$tmp/ran" >/dev/null 2>&1
[ -e "$tmp/ran" ] || bad "daxkit run with a bad option (not strict) did not run the command"

# config --doc lists every option
"$cli" config --doc >"$tmp/doc" 2>&1 || bad "daxkit config --doc failed"
n=0
for name in $(sed -n 's/^OPT([a-z_]*, *\([A-Z_]*\),.*/\1/p' "$DAXKIT_SRC/src/common/options.def"); do
    n=$((n + 1))
    grep -q "DAXKIT_$name" "$tmp/doc" || bad "daxkit config --doc does not list DAXKIT_$name"
done
[ $n -ge 10 ] || bad "could not read the option names from options.def ($n)"
echo "ok: daxkit config --doc lists all $n options"

# verbose banner: the non-default values, and not the defaults
out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_VERBOSE=1 DAXKIT_NT_MIN_BYTES=512 DAXKIT_CACHE_FILES=7 "$probe" "$dir" 2>&1) \
    || bad "verbose run failed: $out"
banner=$(echo "$out" | grep -m1 "loaded")
[ -n "$banner" ] || bad "DAXKIT_VERBOSE=1 printed no banner: $out"
grep -q "NT_MIN_BYTES=512" <<< "$banner" || bad "banner lacks DAXKIT_NT_MIN_BYTES=512: $banner"
grep -q "CACHE_FILES=7" <<< "$banner" || bad "banner lacks DAXKIT_CACHE_FILES=7: $banner"
grep -q "POPULATE\|STAGING_FILES" <<< "$banner" && bad "banner lists default values: $banner"
echo "ok: banner: $banner"
out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_NT_MIN_BYTES=512 "$probe" "$dir" 2>&1)
grep -q "loaded" <<< "$out" && bad "a banner is printed without DAXKIT_VERBOSE: $out"

echo "config.sh: $fails failure(s)"
[ $fails -eq 0 ]
