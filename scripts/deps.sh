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
apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null && exit 0
# One package apt cannot get (offline, not in the mirror, a kernel package whose hooks fail here) made
# apt install none of the list, and `make test` ran no test at all (review 12, finding 6). Now each package
# is tried alone; only the build group's are required: without another group's package the tests and
# benchmarks that need it skip (exit 77) and say so.
missing=()
for p in "${want[@]}"; do
  apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
required=()
for p in "${missing[@]}"; do
  case " ${GROUP[build]} " in *" $p "*) [[ " $* " == *" build "* ]] && required+=("$p") ;; esac
done
if [ ${#required[@]} -gt 0 ]; then
  echo "deps.sh: cannot install ${required[*]}, needed to build; install them with apt-get and run make again" >&2
  exit 1
fi
echo "deps.sh: could not install ${missing[*]} (apt-get failed: offline, or not in the package mirror); the tests and benchmarks that need them skip and say so" >&2
