/* Description: a log on a medium too small for it (argv[1]: a directory on a 5 MiB tmpfs, from
 * oplog_enospc.sh): opening a 16 MiB log succeeds (only 2 MiB is allocated), appends succeed until the next
 * 2 MiB step cannot be allocated and then return -ENOSPC -- never SIGBUS --, every acknowledged record scans
 * back intact, and after a reset the already-allocated slots are reused. Exit 0 pass, 1 fail. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "oplog/oplog.h"
#include "records.h"

struct counts {
    uint64_t ok, bad;
};

static int count_cb(const struct dk_oplog_record *r, void *ctx) {
    struct counts *c = ctx;
    uint32_t w, i;
    if (rec_intact(r, &w, &i)) c->ok++;
    else c->bad++;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: %s DIR\n", argv[0]), 1;
    struct dk_oplog *log;
    int rc = dk_oplog_open(argv[1], "full", 16u << 20, &log);
    if (rc != 0) return printf("FAIL: open a 16 MiB log on a small medium: %d\n", rc), 1;
    uint32_t acked = 0;
    while ((rc = rec_append(log, 0, acked, 0, NULL)) == 0) acked++;
    int bad = 0;
    if (rc != -ENOSPC) bad = printf("FAIL: append ended with %d, -ENOSPC expected\n", rc);
    if ((uint64_t)acked >= dk_oplog_lines_capacity(log))
        bad = printf("FAIL: %u appends fit: the medium was not too small\n", acked);
    rc = dk_oplog_append(log, DK_OPLOG_TRUNCATE, NULL, NULL, 0, NULL);
    if (rc != -ENOSPC) bad = printf("FAIL: an append after ENOSPC returned %d\n", rc);
    struct counts c = {0};
    struct dk_oplog_scan_stats st;
    rc = dk_oplog_scan(dk_oplog_path(log), count_cb, &c, &st);
    if (rc != 0 || c.ok != acked || c.bad != 0)
        bad = printf("FAIL: scan %d: %lu of %u acknowledged records, %lu bad\n", rc, (unsigned long)c.ok, acked,
                     (unsigned long)c.bad);
    printf("%u one-line records fit before ENOSPC (capacity %lu)\n", acked,
           (unsigned long)dk_oplog_lines_capacity(log));
    rc = dk_oplog_reset(log);
    uint32_t again = 0;
    while (again < acked && rec_append(log, 1, again, 0, NULL) == 0) again++;
    if (rc != 0 || again != acked) bad = printf("FAIL: after reset %d, %u of %u appends fit again\n", rc, again, acked);
    dk_oplog_close(log, 1);
    return bad ? 1 : 0;
}
