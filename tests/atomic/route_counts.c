/* The DAXKIT_ATOMIC counters add up (run under `daxkit run --atomic` with a 2 MiB log, by route_counts.sh):
 * every commit is counted. Transactions larger than the log: the journal (the default policy) grows
 * (atomic_log_grows > 0), nothing commits early, and atomic_commits equals the fsyncs (review 8, finding 8);
 * the other policies (DAXKIT_ATOMIC_POLICY=hybrid|undo|redo) commit early (atomic_log_full), and
 * atomic_commits must equal fsyncs + early commits. The counters are read with `daxkit stats PID --json`
 * (st_stats_cli_json: raw clone/execve, a fork would detach the route: a commit).
 * `direct` (session 17, the journal): a new file written whole before its first fsync -- 12 MiB against the 2 MiB
 * log -- goes straight into the file (alog_jdirect.c: past the committed size, no record), so the journal
 * does not grow (before: grown to 16 MiB, atomic_log_grows 3); the bytes read back, overwritten inside the
 * committed size (through the journal), and the file read back after that fsync.
 *
 *   route_counts FILE [direct]        exit 0 pass, 1 fail */
#include "shim_test.h" /* st_stats_cli_json, st_json_counter, CHECK */

static char buf[64 << 10];

static void check_bytes(int fd, off_t off, char want) {
    static char got[sizeof buf];
    CHECK(pread(fd, got, sizeof got, off) == sizeof got, "pread at %lld", (long long)off);
    for (size_t i = 0; i < sizeof got; i++) CHECK(got[i] == want, "byte %lld is %d, not %d", (long long)off + (long long)i, got[i], want);
}

static int direct(int fd) {
    const int chunks = 192; /* 12 MiB */
    for (int i = 0; i < chunks; i++) {
        memset(buf, 'a' + i % 26, sizeof buf);
        CHECK(write(fd, buf, sizeof buf) == sizeof buf, "write");
    }
    CHECK(fsync(fd) == 0, "fsync");
    for (int i = 0; i < chunks; i += 7) check_bytes(fd, (off_t)i * (off_t)sizeof buf, (char)('a' + i % 26));
    memset(buf, 'Z', sizeof buf);
    CHECK(pwrite(fd, buf, sizeof buf, 5 * (off_t)sizeof buf) == sizeof buf, "pwrite");
    CHECK(fsync(fd) == 0, "fsync");
    check_bytes(fd, 5 * (off_t)sizeof buf, 'Z');
    check_bytes(fd, 6 * (off_t)sizeof buf, (char)('a' + 6));
    const char *json = st_stats_cli_json();
    unsigned long long grows = st_json_counter(json, "atomic_log_grows"), commits = st_json_counter(json, "atomic_commits");
    printf("route_counts: direct: 12 MiB before the first fsync, atomic_log_grows %llu, atomic_commits %llu\n", grows,
           commits);
    CHECK(grows == 0, "the journal grew %llu time(s): a new file's bytes went through it", grows);
    CHECK(commits == 2, "atomic_commits %llu != 2 fsyncs", commits);
    CHECK(close(fd) == 0, "close");
    printf("ok: a new file's bytes went straight into it (the journal did not grow)\n");
    return 0;
}

int main(int argc, char **argv) {
    CHECK(argc > 1, "usage: route_counts FILE [direct]");
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    if (argc > 2 && !strcmp(argv[2], "direct")) return direct(fd);
    int fsyncs = 0;
    for (int txn = 0; txn < 3; txn++) { /* 3 transactions of 5 MiB each: larger than the 2 MiB log */
        memset(buf, 'a' + txn, sizeof buf);
        for (int i = 0; i < 80; i++) CHECK(pwrite(fd, buf, sizeof buf, (off_t)i * (off_t)sizeof buf) == sizeof buf, "pwrite");
        CHECK(fsync(fd) == 0, "fsync");
        fsyncs++;
    }
    const char *json = st_stats_cli_json();
    unsigned long long commits = st_json_counter(json, "atomic_commits");
    unsigned long long early = st_json_counter(json, "atomic_log_full");
    unsigned long long grows = st_json_counter(json, "atomic_log_grows");
    const char *policy = getenv("DAXKIT_ATOMIC_POLICY");
    bool journal = !policy || !*policy || !strcmp(policy, "journal");
    printf("route_counts: %s: %d fsyncs, atomic_log_grows %llu, atomic_log_full %llu, atomic_commits %llu\n",
           journal ? "journal" : policy, fsyncs, grows, early, commits);
    if (journal) {
        CHECK(grows > 0, "the journal did not grow: the transactions fit the log, the test proves nothing");
        CHECK(early == 0, "%llu early commits: a transaction larger than the journal was committed in pieces", early);
    } else {
        CHECK(early > 0, "no early commit: the transactions fit the log, the test proves nothing");
    }
    CHECK(commits == (unsigned long long)fsyncs + early, "atomic_commits %llu != fsyncs %d + early commits %llu",
          commits, fsyncs, early);
    CHECK(close(fd) == 0, "close");
    printf("ok: every commit counted%s\n", journal ? ", none early (the journal grew)" : ", the early ones too");
    return 0;
}
