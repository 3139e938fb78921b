#!/usr/bin/env bash
# Description: the preload library needs libc alone (DT_NEEDED). Every process `daxkit run` starts loads it, so
# each further library is a load and relocation per process start (git, tar and rsync start many), and the
# FS-DAX guest's image carries what it needs: session 22's -fexceptions build of stdio.c pulled in libgcc_s.so.1
# (its landing pads call _Unwind_Resume), whose /lib directory in the guest's second archive replaced the
# base image's /lib -> usr/lib link and with it every kernel module (dax_guest_short failed).
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
lib=$(dk_lib) || exit 1
dk_need_cmd readelf
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
echo "lib_needed: $lib needs: $needed"
for n in $needed; do
    case $n in
    libc.so.6 | ld-linux-x86-64.so.2) ;;
    *) dk_fail "libdaxkit.so needs $n (only libc may be needed: see this script's description)" ;;
    esac
done
echo "lib_needed: pass"
