#!/usr/bin/env bash
# Description: builds the FS-DAX guest image under BUILD/dax-guest (see docs/dax-guest.md).
#
#   build-guest.sh BUILD
#
# Two parts, so that a daxkit rebuild does not redo the slow one:
#   base.cpio    kernel modules (nfit, libnvdimm, nd_pmem, dax_pmem, xfs, ext4 and what they need), busybox,
#                bash, ndctl, mkfs.xfs, mke2fs, python3 (for the differential tester's driver) and their shared
#                libraries, copied from the host. Rebuilt only when one of those files (size, mtime) or this
#                script's BASE_FORMAT changes: the key is in base.key.
#   daxkit.cpio  /init, the test scripts and BUILD's libdaxkit.so, daxkit CLI and test programs (+ any library
#                they need that base lacks). Rebuilt every time (small, about a second).
#   initrd       base.cpio followed by daxkit.cpio (the kernel unpacks concatenated archives in order).
#   vmlinuz      the guest kernel (DK_DAX_KERNEL, else the newest /boot/vmlinuz-6.1.*-amd64).
# DK_DAX_RUN_DIR (run-guest.sh --run DIR): that directory goes into daxkit.cpio as /dk/run.
# Prints "build-guest: ..." lines with what it did and how long it took. Exit 0 done, 77 a needed file is
# missing (reason printed: run scripts/deps.sh dax), 1 error.
set -euo pipefail
BASE_FORMAT=1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: build-guest.sh BUILD}" && pwd)
out=$build/dax-guest
t0=$(date +%s.%N)

skip() { echo "SKIP: $*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
need_cmd() { for c in "$@"; do command -v "$c" >/dev/null 2>&1 || skip "'$c' not found; run scripts/deps.sh dax"; done; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

need_cmd cpio ldd busybox cat bash ndctl mkfs.xfs mke2fs sha256sum
# Debian's python3 (not a shim from a version manager earlier on PATH): its binary and standard library.
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 not found (package python3)"
python=$(readlink -f /usr/bin/python3)
kernel=${DK_DAX_KERNEL:-$(ls /boot/vmlinuz-6.1.*-amd64 2>/dev/null | sort -V | tail -1)}
[ -n "$kernel" ] && [ -r "$kernel" ] || skip "no guest kernel /boot/vmlinuz-6.1.*-amd64 (package linux-image-amd64); run scripts/deps.sh dax"
kver=${kernel#*/vmlinuz-}
moddir=/lib/modules/$kver
[ -r "$moddir/modules.dep" ] || skip "$moddir/modules.dep missing (linux-image-$kver not fully installed); run scripts/deps.sh dax"
busybox=$(command -v busybox)
ldd "$busybox" >/dev/null 2>&1 && skip "$busybox is not statically linked (install busybox-static)"
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pylib=/usr/lib/python$pyver
[ -d "$pylib" ] || fail "python3 standard library $pylib not found"

# Modules the guest loads, in dependency order (each after the modules it needs, per modules.dep).
# crc32c-intel / crc32c_generic provide the "crc32c" hash that libcrc32c (xfs) and ext4 ask the crypto API for.
MODULES="crc32c_generic crc32c-intel libnvdimm nfit nd_btt nd_pmem dax_pmem libcrc32c xfs crc16 mbcache jbd2 ext4"
declare -A mod_seen=()
mod_order=()
mod_path() { # relative path of module NAME in modules.dep ('-' and '_' are the same in module names)
    local pat=${1//[-_]/[-_]}
    grep -oE "^[^:]*/$pat\.ko(\.xz|\.zst|\.gz)?:" "$moddir/modules.dep" | head -1 | tr -d :
}
mod_add() { # mod_add RELPATH: its dependencies first
    local rel=$1 dep
    [ -n "${mod_seen[$rel]+x}" ] && return
    mod_seen[$rel]=1
    for dep in $(grep -E "^$rel:" "$moddir/modules.dep" | cut -d: -f2); do mod_add "$dep"; done
    mod_order+=("$rel")
}
for m in $MODULES; do
    rel=$(mod_path "$m")
    [ -n "$rel" ] || fail "module $m not found in $moddir/modules.dep"
    mod_add "$rel"
done

# Host binaries for the guest, and every shared library they load.
bins=("$busybox" "$(command -v bash)" "$(command -v ndctl)" "$(command -v mkfs.xfs)" "$(command -v mke2fs)"
      "$python" /usr/bin/cat)
# /usr/bin/cat: the driver checks the preload by running cat under LD_PRELOAD, which a static busybox ignores.
libs_of() { # the shared libraries (absolute paths) of each argument
    ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(0x/ { print $1 }' | sort -u
}
base_files=("$kernel" "$0" "${bins[@]}")
for rel in "${mod_order[@]}"; do base_files+=("$moddir/$rel"); done
mapfile -t base_libs < <(libs_of "${bins[@]}" "$pylib"/lib-dynload/*.so)
base_files+=("${base_libs[@]}")

mkdir -p "$out"
key=$( (echo "format $BASE_FORMAT kernel $kver modules $MODULES"
        stat -L -c '%n %s %Y' "${base_files[@]}" "$pylib/os.py") | sha256sum | cut -c1-16)

build_base() {
    local root=$out/base-root
    rm -rf "$root" "$out/base.cpio" "$out/base.key"
    mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,usr/lib64,proc,sys,dev,tmp,mnt/xfs,mnt/ext4,etc,root,run}
    ln -s usr/bin "$root/bin"
    ln -s usr/sbin "$root/sbin"
    ln -s usr/lib "$root/lib"
    ln -s usr/lib64 "$root/lib64"
    local b lib
    for b in "${bins[@]}"; do cp -L "$b" "$root/usr/bin/"; done
    ln -s mke2fs "$root/usr/bin/mkfs.ext4"
    ln -s "python$pyver" "$root/usr/bin/python3"
    for lib in "${base_libs[@]}"; do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
    # Modules, decompressed (busybox insmod reads plain .ko), and the order to load them in.
    mkdir -p "$root/lib/modules/$kver"
    for rel in "${mod_order[@]}"; do
        local dst=$root/lib/modules/$kver/$(basename "$rel")
        case $rel in
        *.xz) xz -dc "$moddir/$rel" >"${dst%.xz}" ;;
        *.zst) zstd -qdc "$moddir/$rel" >"${dst%.zst}" ;;
        *.gz) gzip -dc "$moddir/$rel" >"${dst%.gz}" ;;
        *) cp "$moddir/$rel" "$dst" ;;
        esac
        basename "${dst%.*}" >>"$root/etc/dk-modules"
    done
    # The standard library without what the driver never imports (tests, GUI, build configuration).
    mkdir -p "$root$pylib"
    (cd "$pylib" && tar -c --exclude='./test' --exclude='./idlelib' --exclude='./tkinter' --exclude='./turtledemo' \
        --exclude='./lib2to3' --exclude='./ensurepip' --exclude='./pydoc_data' --exclude='./distutils' \
        --exclude='./config-*' --exclude='./site-packages' --exclude='./dist-packages' --exclude='./venv' \
        --exclude='./unittest' --exclude='./asyncio' --exclude='./email' --exclude='./xml' --exclude='./http' \
        --exclude='./sqlite3' --exclude='./curses' --exclude='./multiprocessing' --exclude='./xmlrpc' \
        --exclude='./wsgiref' --exclude='./urllib' --exclude='./dbm' --exclude='./ctypes' .) |
        tar -x -C "$root$pylib"
    echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
    echo "root:x:0:" >"$root/etc/group"
    (cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$out/base.cpio.tmp"
    mv "$out/base.cpio.tmp" "$out/base.cpio"
    echo "$key" >"$out/base.key"
}

if [ "$(cat "$out/base.key" 2>/dev/null)" = "$key" ] && [ -s "$out/base.cpio" ] && [ -d "$out/base-root" ]; then
    echo "build-guest: base image up to date (key $key)"
else
    tb=$(date +%s.%N)
    build_base
    echo "build-guest: base image built in $(elapsed "$tb") s ($(du -m "$out/base.cpio" | cut -f1) MiB, kernel $kver," \
         "${#mod_order[@]} modules)"
fi
cp -L "$kernel" "$out/vmlinuz.tmp" && mv "$out/vmlinuz.tmp" "$out/vmlinuz"

# The daxkit part: what BUILD holds now.
dk_bins=(bin/daxkit tests/dk_difftest tests/shim_crash tests/shim_check tests/dax_counters tests/clone_zero
         tests/zero_page_stale tests/hole_write_zero tests/publish_crash)
droot=$out/daxkit-root
rm -rf "$droot"
mkdir -p "$droot/dk/build/lib" "$droot/dk/build/bin" "$droot/dk/build/tests" "$droot/dk/src/tests"
cp "$build/lib/libdaxkit.so" "$droot/dk/build/lib/" || fail "$build/lib/libdaxkit.so not built"
for b in "${dk_bins[@]}"; do
    [ -x "$build/$b" ] || fail "$build/$b not built (ninja -C $build)"
    cp "$build/$b" "$droot/dk/build/$b"
done
for d in harness diff shim dax crash; do
    mkdir -p "$droot/dk/src/tests/$d"
    find "$src/tests/$d" -maxdepth 1 -type f \( -name '*.sh' -o -name '*.py' \) -exec cp {} "$droot/dk/src/tests/$d/" \;
done
# The differential tester's shrunk op lists (fixed regression cases: tests/diff/replay-cases.sh).
mkdir -p "$droot/dk/src/tests/diff/cases"
cp "$src"/tests/diff/cases/*.ops "$droot/dk/src/tests/diff/cases/"
# A dynamically linked /bin/true over busybox's static applet: the tests recover "the way a user gets it",
# by starting a daxkit program (env LD_PRELOAD=... /bin/true), and a static binary ignores LD_PRELOAD --
# under busybox's true the startup recovery never ran (crash_*_extend failed in the guest only).
true_bin=$(readlink -f /usr/bin/true)
if [ -x "$true_bin" ] && ldd "$true_bin" >/dev/null 2>&1; then
    mkdir -p "$droot/usr/bin" # /bin is a link to usr/bin in the base; busybox --install keeps existing files
    cp "$true_bin" "$droot/usr/bin/true"
fi
for lib in $(libs_of "$build/lib/libdaxkit.so" "${dk_bins[@]/#/$build/}" "$true_bin"); do
    [ -e "$out/base-root$lib" ] && continue
    mkdir -p "$droot$(dirname "$lib")"
    cp -L "$lib" "$droot$lib"
done
# run-guest.sh --run DIR: the caller's commands (DIR/run.sh and its files) as /dk/run.
if [ -n "${DK_DAX_RUN_DIR:-}" ]; then
    mkdir -p "$droot/dk/run"
    cp -r "$DK_DAX_RUN_DIR"/. "$droot/dk/run/"
fi
cp "$here/guest-init.sh" "$droot/init"
chmod 755 "$droot/init"
(cd "$droot" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$out/daxkit.cpio"
cat "$out/base.cpio" "$out/daxkit.cpio" >"$out/initrd.tmp"
mv "$out/initrd.tmp" "$out/initrd"
echo "build-guest: image ready in $(elapsed "$t0") s: $out/vmlinuz, $out/initrd ($(du -m "$out/initrd" | cut -f1) MiB)"
