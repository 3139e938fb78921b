#!/usr/bin/env bash
# Runs one tests/progs script under another daxkit configuration: with.sh MODE APPEND SCRIPT ARGS...
# (MODE posix|sync, APPEND stage|extend|auto; "-" keeps the default). ctest passes only arguments, so the
# variants are registered through this wrapper.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: with.sh MODE APPEND SCRIPT [ARGS...]" >&2; exit 1; }
[ "$1" != - ] && export DK_PROGS_MODE=$1
[ "$2" != - ] && export DK_PROGS_APPEND=$2
script=$3
shift 3
exec bash "$(dirname "$0")/$script" "$@"
