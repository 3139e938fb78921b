#!/bin/bash
# Runs drive.py (the process-crash driver) with the arguments given; skips when python3 is missing.
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (scripts/deps.sh test group)" >&2; exit 77; }
exec python3 "$(dirname "$0")/drive.py" "$@"
