#!/bin/bash
# Description: the process-crash driver and the oplog checker can fail: a workload that acknowledges a
# record before appending it (OPLOG_CRASH_ACK_EARLY=1) must be reported with its site, occurrence and seed;
# a recovery that removes the log before its results are durable (OPLOG_CRASH_UNLINK_FIRST=1) must be
# reported by --recovery-crashes.
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

# A recovery that removes the log before its results are durable must be caught by --recovery-crashes.
out=$(OPLOG_CRASH_UNLINK_FIRST=1 python3 "$(dirname "$0")/drive.py" --workload "$bin workload {dir} 1 5" \
      --recover "$bin recover {dir}" --check "$bin verify {dir}" --max-runs 10 --recovery-crashes 5 --recovery-runs 10 2>&1)
rc=$?
echo "$out" | tail -4
if [ $rc -ne 1 ] || ! echo "$out" | grep -q "after recovery crashed at oplog_crash.recover.written"; then
    echo "FAIL: the driver did not report the recovery that is unsafe to interrupt (exit $rc)"
    exit 1
fi
echo "ok: the unsafe recovery was reported"
