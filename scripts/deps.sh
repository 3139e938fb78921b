#!/usr/bin/env bash
# Installs the Debian packages a make target needs, only those missing. Usage: deps.sh GROUP...
# Groups: build test bench demo dax. Runs apt-get update at most once per call, and only when needed.
set -euo pipefail

declare -A GROUP=(
  [build]="cmake ninja-build gcc g++ make liburing-dev pkg-config"
  [test]="xfsprogs util-linux sqlite3 redis-server redis-tools rocksdb-tools fio rsync git tar python3 e2fsprogs"
  [bench]="fio python3-matplotlib sqlite3 redis-server redis-tools rocksdb-tools rsync git tar xfsprogs"
  [demo]="sqlite3 util-linux"
  [dax]="qemu-system-x86 busybox-static ndctl xfsprogs e2fsprogs cpio kmod linux-image-amd64"
)

want=()
for g in "$@"; do
  [ -n "${GROUP[$g]+x}" ] || { echo "deps.sh: unknown group '$g' (known: ${!GROUP[*]})" >&2; exit 2; }
  for p in ${GROUP[$g]}; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || want+=("$p")
  done
done
[ ${#want[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "deps.sh: missing packages: ${want[*]}; run as root or install them with apt-get" >&2
  exit 1
fi
echo "deps.sh: installing ${want[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || true
# redis-server's postinst starts a service; policy-rc.d keeps package installs from starting daemons.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
