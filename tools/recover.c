/* daxkit recover DIR...: finishes what processes that died under daxkit left in managed directories
 * (extend-strategy files rolled back to their published size, staging files removed). Safe to run
 * while daxkit programs use the directory: only the leftovers of processes that are gone are touched. */
#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "atomic/alog.h"
#include "commands.h"
#include "json.h"
#include "upath/internal.h"

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The DAXKIT_ATOMIC logs under dir: recovered and reported; 1 when some failed. */
static int recover_atomic(const char *dir, int json) {
    struct alog_dir_report arep;
    int rc = alog_recover_dir(dir, &arep);
    if (rc) {
        fprintf(stderr, "daxkit recover: %s: DAXKIT_ATOMIC logs not recovered: %s\n", dir, strerror(-rc));
        return 1;
    }
    if (!(arep.recovered || arep.failed || arep.files_gone)) return 0;
    if (json) {
        printf("{\"dir\":");
        dk_json_str(stdout, dir);
        printf(",\"atomic_logs\":%llu,\"atomic_recovered\":%llu,\"atomic_failed\":%llu,\"atomic_files_gone\":%llu,"
               "\"atomic_refused\":%llu}\n",
               (unsigned long long)arep.logs, (unsigned long long)arep.recovered, (unsigned long long)arep.failed,
               (unsigned long long)arep.files_gone, (unsigned long long)arep.refused);
    } else {
        printf("%s: DAXKIT_ATOMIC: %llu file(s) recovered to their last commit, %llu failed (%llu of them logs of a "
               "format this daxkit does not read, left untouched), %llu log(s) whose file is gone (renamed or "
               "removed) left in place\n", dir, (unsigned long long)arep.recovered, (unsigned long long)arep.failed,
               (unsigned long long)arep.refused, (unsigned long long)arep.files_gone);
    }
    return arep.failed ? 1 : 0;
}

static int recover_one_dir(const char *dir, int json) {
    struct stat st; /* a typo must not read as a clean recovery */
    const char *why = stat(dir, &st) != 0 ? strerror(errno) : !S_ISDIR(st.st_mode) ? "not a directory" : NULL;
    if (why) {
        fprintf(stderr, "daxkit recover: %s: %s -- give a managed directory, as given to --dir\n", dir, why);
        return 1;
    }
    struct up_recover_report rep = {0};
    uint64_t t0 = now_ns();
    int rc = up_recover_dir(dir, &rep);
    uint64_t ns = now_ns() - t0;
    if (rc) {
        fprintf(stderr, "daxkit recover: cannot open %s/.daxkit: %s\n", dir, strerror(-rc));
        recover_atomic(dir, json); /* one failure must not hide the other recovery */
        return 1;
    }
    if (json) {
        printf("{\"dir\":");
        dk_json_str(stdout, dir);
        printf(",\"owners_gone\":%llu,\"files_removed\":%llu,\"rolled_back\":%llu,"
               "\"bytes_dropped\":%llu,\"untouched\":%llu,\"files_gone\":%llu,\"failed\":%llu,\"errors\":%llu,"
               "\"strict_logs\":%llu,\"strict_records\":%llu,\"strict_replayed\":%llu,\"strict_torn\":%llu,"
               "\"strict_meta\":%llu,\"strict_failed\":%llu,\"strict_other_fs\":%llu,\"strict_staged_torn\":%llu,"
               "\"strict_files_reused\":%llu,\"strict_logs_kept\":%llu,\"strict_done_skipped\":%llu,\"strict_delta_stale\":%llu,\"reused\":%llu,\"strict_foreign_refused\":%llu,"
               "\"foreign_left\":%llu,\"foreign_uid\":%u,\"strict_replay_us\":%.1f,\"elapsed_us\":%.1f}\n",
               (unsigned long long)rep.owners_gone, (unsigned long long)rep.files_removed,
               (unsigned long long)rep.sizes.rolled_back, (unsigned long long)rep.sizes.bytes_dropped,
               (unsigned long long)rep.sizes.untouched, (unsigned long long)rep.sizes.gone,
               (unsigned long long)rep.sizes.failed, (unsigned long long)rep.errors,
               (unsigned long long)rep.strict.logs, (unsigned long long)rep.strict.records,
               (unsigned long long)rep.strict.replayed, (unsigned long long)rep.strict.torn,
               (unsigned long long)rep.strict.meta_seen, (unsigned long long)rep.strict.failed,
               (unsigned long long)rep.strict.other_fs, (unsigned long long)rep.strict.staged_torn,
               (unsigned long long)rep.strict.files_reused, (unsigned long long)rep.strict.logs_kept,
               (unsigned long long)rep.strict.done_skipped, (unsigned long long)rep.strict.delta_stale,
               (unsigned long long)rep.sizes.reused, (unsigned long long)rep.strict.foreign_refused,
               (unsigned long long)rep.foreign_left, (unsigned)rep.foreign_uid, rep.strict.ns / 1e3, ns / 1e3);
    } else {
        printf("%s: %llu dead process(es); %llu file(s) rolled back to their published size (%llu bytes of "
               "unpublished tail dropped), %llu left alone (resized since), %llu no longer found, %llu "
               "gone with their inode number reused by another file (left alone), %llu "
               "failed; %llu leftover file(s) removed; %.1f us\n",
               dir, (unsigned long long)rep.owners_gone, (unsigned long long)rep.sizes.rolled_back,
               (unsigned long long)rep.sizes.bytes_dropped, (unsigned long long)rep.sizes.untouched,
               (unsigned long long)rep.sizes.gone, (unsigned long long)rep.sizes.reused,
               (unsigned long long)rep.sizes.failed,
               (unsigned long long)rep.files_removed, ns / 1e3);
        if (rep.strict.logs)
            printf("%s: strict mode: %llu operation log(s), %llu valid record(s): %llu replayed, %llu applied before "
                   "the process died (not replayed), %llu metadata "
                   "(atomic in the kernel), %llu torn (ignored: never acknowledged), %llu failed, %llu of a file "
                   "system not mounted here (not replayed), %llu of a file that is gone whose inode number "
                   "another file has now (not replayed); %llu log(s) kept for a later recovery (no space); %.1f ms, "
                   "%.2f million records/s\n",
                   dir, (unsigned long long)rep.strict.logs, (unsigned long long)rep.strict.records,
                   (unsigned long long)rep.strict.replayed, (unsigned long long)rep.strict.done_skipped,
                   (unsigned long long)rep.strict.meta_seen,
                   (unsigned long long)rep.strict.torn, (unsigned long long)rep.strict.failed,
                   (unsigned long long)rep.strict.other_fs, (unsigned long long)rep.strict.files_reused,
                   (unsigned long long)rep.strict.logs_kept, rep.strict.ns / 1e6, rep.strict.ns ? rep.strict.records * 1e3 / rep.strict.ns : 0.0);
    }
    /* Another user's dead processes: recovered by root (their logs replayed onto files that user may write
     * only), else left for that user -- said, and the exit status is 1: not everything was recovered. */
    if (rep.foreign_left && !json)
        printf("%s: %llu file(s) of other users' dead processes left (uid %u%s): %s\n", dir,
               (unsigned long long)rep.foreign_left, (unsigned)rep.foreign_uid,
               rep.strict.foreign_refused ? "; a log naming a file its user may not write" : "",
               rep.strict.foreign_refused ? "that user's next daxkit program in the directory replays it"
                                          : "run `daxkit recover` as that user or as root");
    int atomic_rc = recover_atomic(dir, json);
    return rep.sizes.failed || rep.errors || rep.strict.failed || rep.foreign_left || atomic_rc ? 1 : 0;
}

int dk_cmd_recover(int argc, char **argv) {
    int json = 0, ndirs = 0, rc = 0, first_dir = argc; /* after "--" every argument is a directory */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            first_dir = i + 1;
            break;
        }
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "daxkit recover: unknown option '%s'\nusage: daxkit recover [--json] [--] DIR...\n", argv[i]);
            return 2;
        }
    }
    for (int i = 1; i < argc; i++) {
        if (i < first_dir && (argv[i][0] == '-')) continue;
        ndirs++;
        rc |= recover_one_dir(argv[i], json);
    }
    if (!ndirs) {
        fprintf(stderr, "usage: daxkit recover [--json] DIR...  (a managed directory, as given to --dir)\n");
        return 2;
    }
    return rc;
}
