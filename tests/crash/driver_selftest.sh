#!/bin/bash
# Description: the process-crash driver and the oplog checker can fail: a workload that acknowledges a
# record before appending it (OPLOG_CRASH_ACK_EARLY=1) must be reported with its site, occurrence and seed.
# Exit 0 when the driver reports it, 1 when the driver passes the broken workload, 77 without python3.
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed" >&2; exit 77; }
bin=${DAXKIT_BUILD:?}/tests/oplog_crash
out=$(OPLOG_CRASH_ACK_EARLY=1 python3 "$(dirname "$0")/drive.py" --workload "$bin workload {dir} 2 10" \
      --recover "$bin recover {dir}" --check "$bin verify {dir}" --filter 'oplog\.append\.reserved' --max-runs 20 2>&1)
rc=$?
echo "$out" | tail -5
if [ $rc -ne 1 ] || ! echo "$out" | grep -q "FAIL site=oplog.append.reserved occurrence=[0-9]* seed=[0-9]*" ||
   ! echo "$out" | grep -q "acknowledged but not recovered"; then
    echo "FAIL: the driver did not report the broken workload (exit $rc)"
    exit 1
fi
echo "ok: the broken workload was reported"
