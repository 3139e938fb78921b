/* Description: the log's format version (review 19, finding 4; alog_layout.h). Session 19 gave the header's
 * former policy word a new meaning (A: redo entries below it are applied and may be released, their log
 * blocks reused) without changing the version, and a library treated a log of a version it did not know as
 * absent and formatted it anew (committed work discarded). Now a log that has carried A is version 2 (a log
 * without A stays 1, which older libraries read); versions 1 and 2 are read; any other is refused with
 * -EPROTONOSUPPORT and left byte for byte.
 * Each case crashes a redo engine (a child that exits without closing, log_bytes 4 MiB, no checkpoint thread)
 * so that its log holds committed redo entries not in the file, and then:
 *   v1-policy   the log (version 1 as formatted: no A) rewritten as a pre-session-19 library left it: policy
 *               word ALOG_REDO (2), untagged -- which, read as A, would hide the committed entries of epoch 1.
 *               The open must replay them (the file equals the model) and leave the version at 1; then paced
 *               redo syncs store A, and with it version 2.
 *   v1-applied  as session 19's library left it: version 1 with a tagged A, and released entries below A
 *               whose log blocks were reused (checked: the state holds one). The open must honour A
 *               (replaying those entries would put other blocks' bytes over them); A stored again -> 2.
 *   newer       the log marked version 3, then 0: the engine's open and `daxkit recover` (alog_recover_dir)
 *               fail (-EPROTONOSUPPORT; recover counts it failed) with a message naming the format, and the
 *               log and the file are unchanged; marked 2 again, the log recovers the file to the model.
 * Usage: atomic_log_version v1-policy|v1-applied|newer [DIR] */
#include <stddef.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "atomic_engine_test.h"

#define FILE_BYTES (8u << 20)
#define BLOCKS (FILE_BYTES / 4096u)
#define COPY_BYTES 128u
#define COPY_AT 512u /* every copy at the same place in its block: a reused log block holds another's bytes there */

static char path[600], log_path[700];
static char *model; /* shared with the child that crashes */

static struct alog_file *open_engine(int *rc) { return at_engine_try_open(path, DAXKIT_ATOMIC_REDO, 4u << 20, rc); }

/* `count` copies into distinct blocks from `first`; into the model only when `committed` will be true. */
static void copies(struct alog_file *f, uint32_t first, uint32_t count, uint32_t tag, bool committed) {
    char buf[COPY_BYTES];
    for (uint32_t i = 0; i < count; i++) {
        uint64_t off = (uint64_t)(first + i) * 4096 + COPY_AT;
        for (uint32_t j = 0; j < COPY_BYTES; j++) buf[j] = (char)((tag + i) * 131 + j * 7 + 1);
        if (alog_copy(f, off, buf, COPY_BYTES)) _exit(3);
        if (committed) memcpy(model + off, buf, COPY_BYTES);
    }
}

/* The child: `rounds` synced epochs of `per_round` blocks each (new blocks every round), then as many copies
 * not synced; exits without closing. Pacing as `pace` ("0": the copies apply nothing; "1": they apply and
 * release committed entries, and the commits store A). */
static void crash(const char *pace, uint32_t rounds, uint32_t per_round) {
    at_make_model_file(path, FILE_BYTES, 7, model);
    fflush(stdout);
    pid_t pid = fork();
    AT_CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        setenv("DAXKIT_ATOMIC_PACE", pace, 1);
        int rc;
        struct alog_file *f = open_engine(&rc);
        if (rc) _exit(2);
        if (!strcmp(pace, "1") && !f->bpace) _exit(77); /* a pagecache medium: redo is not paced there */
        uint32_t next = 1;
        for (uint32_t r = 0; r < rounds; r++, next += per_round) {
            copies(f, next, per_round, 1000 * (r + 1), true);
            if (alog_sync(f)) _exit(4);
        }
        copies(f, next, per_round, 999999, false);
        _exit(0);
    }
    int st;
    AT_CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st), "the crashing child: status 0x%x", st);
    if (WEXITSTATUS(st) == 77) at_skip("pacing is off on this medium (pagecache): no commit stores A");
    AT_CHECK(WEXITSTATUS(st) == 0, "the crashing child: exit %d", WEXITSTATUS(st));
}

static void header_read(struct alog_phdr *h) {
    int fd = open(log_path, O_RDONLY);
    AT_CHECK(fd >= 0 && pread(fd, h, sizeof *h, 0) == (ssize_t)sizeof *h, "read the header of %s", log_path);
    close(fd);
}

static void header_patch(size_t off, const void *v, size_t n) {
    int fd = open(log_path, O_WRONLY);
    AT_CHECK(fd >= 0 && pwrite(fd, v, n, (off_t)off) == (ssize_t)n, "patch the header of %s", log_path);
    close(fd);
}

static void version_set(uint32_t v) { header_patch(offsetof(struct alog_phdr, version), &v, sizeof v); }

/* Opens the engine (recovering the crashed log) and closes it: the file must equal the model, the version be
 * `version` (an open alone changes no version). */
static void recover_and_check(const char *what, uint32_t version) {
    int rc;
    struct alog_file *f = open_engine(&rc);
    AT_CHECK(rc == 0, "%s: the open failed: %d (%s)", what, rc, strerror(-rc));
    at_check_blocks(f, model, BLOCKS, what);
    AT_OK(alog_close(f));
    static char file[FILE_BYTES];
    at_read_file(path, file, FILE_BYTES);
    AT_CHECK(memcmp(file, model, FILE_BYTES) == 0, "%s: the file after the close differs from the model", what);
    struct alog_phdr h;
    header_read(&h);
    AT_CHECK(h.version == version, "%s: the log's version after the open is %u, want %u", what, h.version, version);
}

/* Paced redo syncs after recovery: a commit stores A, so the log must say version 2 from then on. */
static void applied_makes_v2(const char *what) {
    int rc;
    struct alog_file *f = open_engine(&rc);
    AT_CHECK(rc == 0, "%s: the open failed: %d (%s)", what, rc, strerror(-rc));
    if (!f->bpace) at_skip("pacing is off on this medium (pagecache): no commit stores A");
    for (uint32_t r = 0; r < 4; r++) {
        copies(f, 1000 + r * 60, 60, 5000 * (r + 1), true);
        AT_OK(alog_sync(f));
    }
    AT_OK(alog_close(f));
    struct alog_phdr h;
    header_read(&h);
    AT_CHECK(alog_applied_of(h.redo_applied) > 0, "%s: no A stored by 4 paced redo syncs (word %#llx)", what,
             (unsigned long long)h.redo_applied);
    AT_CHECK(h.version == 2, "%s: the log carries A (%llu) at version %u, want 2", what,
             (unsigned long long)alog_applied_of(h.redo_applied), h.version);
    recover_and_check(what, 2);
}

/* A pre-session-19 log: no pacing (nothing applied, no A), then the v1 policy word ALOG_REDO (2), untagged. */
static void v1_policy(void) {
    crash("0", 1, 40);
    struct alog_phdr h;
    header_read(&h);
    AT_CHECK(h.version == 1, "a log formatted by this library, no A stored: version %u, want 1", h.version);
    uint64_t policy = 2;
    header_patch(offsetof(struct alog_phdr, redo_applied), &policy, sizeof policy);
    recover_and_check("a v1 log (policy word 2) with 40 committed redo entries", 1);
    applied_makes_v2("the v1-policy log after paced redo syncs");
    printf("v1-policy: 40 committed redo entries replayed, the version left at 1; A stored -> version 2\n");
}

/* Valid redo entries below A whose log block a live entry (not below A) holds now: released, reused. */
static uint64_t released_reused(void) {
    struct alog_phdr h;
    header_read(&h);
    uint64_t a = alog_applied_of(h.redo_applied), found = 0;
    AT_CHECK(a > 1, "the crashed log's A is %llu (word %#llx): no commit stored A", (unsigned long long)a,
             (unsigned long long)h.redo_applied);
    struct alog_pent *p = malloc(h.entry_count * sizeof *p);
    int fd = open(log_path, O_RDONLY);
    AT_CHECK(p && fd >= 0 && pread(fd, p, h.entry_count * sizeof *p, ALOG_HEADER_BYTES) ==
                                 (ssize_t)(h.entry_count * sizeof *p), "read the entries of %s", log_path);
    close(fd);
    for (uint64_t i = 0; i < h.entry_count; i++) {
        bool below = (p[i].word & ALOG_WORD_VALID) && (p[i].word & ALOG_WORD_REDO) && p[i].word >> ALOG_WORD_EPOCH_SHIFT < a;
        for (uint64_t j = 0; below && j < h.entry_count; j++)
            found += j != i && alog_pent_pending(&h, &p[j]) && p[j].log_off == p[i].log_off;
    }
    free(p);
    return found;
}

/* Session 19's log: pacing (its copies apply and release committed entries; its commits store A), version 1. */
static void v1_applied(void) {
    crash("1", 12, 60);
    uint64_t reused = released_reused();
    AT_CHECK(reused > 0, "the crashed log holds no released entry below A whose log block was reused: the case "
                         "tests nothing");
    version_set(1);
    recover_and_check("a v1 log with A and released entries below it", 1);
    applied_makes_v2("the v1-applied log after paced redo syncs");
    printf("v1-applied: %llu released entries below A with reused log blocks not replayed; A stored -> version 2\n",
           (unsigned long long)reused);
}

static char *slurp(const char *p, size_t *n) {
    int fd = open(p, O_RDONLY);
    struct stat s;
    AT_CHECK(fd >= 0 && fstat(fd, &s) == 0, "open %s: %s", p, strerror(errno));
    char *b = malloc((size_t)s.st_size + 1);
    AT_CHECK(b && pread(fd, b, (size_t)s.st_size, 0) == s.st_size, "read %s", p);
    close(fd);
    b[s.st_size] = 0;
    *n = (size_t)s.st_size;
    return b;
}

static void unchanged(const char *p, const char *before, size_t n, const char *what) {
    size_t m;
    char *now = slurp(p, &m);
    AT_CHECK(m == n && memcmp(now, before, n) == 0, "%s: %s changed (%zu bytes, was %zu)", what, p, m, n);
    free(now);
}

/* Runs `step` with stderr in a file; returns what it wrote (the library's messages). */
static char *stderr_of(void (*step)(int *), int *rc) {
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s/stderr.txt", at_dir);
    fflush(stderr);
    int saved = dup(2), fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0600);
    AT_CHECK(saved >= 0 && fd >= 0 && dup2(fd, 2) == 2, "redirect stderr: %s", strerror(errno));
    step(rc);
    fflush(stderr);
    dup2(saved, 2), close(saved), close(fd);
    size_t n;
    char *out = slurp(tmp, &n);
    unlink(tmp);
    return out;
}

static void step_open(int *rc) {
    struct alog_file *f = open_engine(rc);
    if (!*rc) alog_close(f);
}

static void step_recover(int *rc) {
    struct alog_dir_report rep;
    *rc = alog_recover_dir(at_dir, &rep);
    if (!*rc && (rep.failed != 1 || rep.recovered != 0)) *rc = -(int)(1000 + rep.failed * 10 + rep.recovered);
}

static void refused(uint32_t version, const char *said) {
    version_set(version);
    size_t ln, dn;
    char *log = slurp(log_path, &ln), *data = slurp(path, &dn);
    char what[100];
    int rc;
    char *err = stderr_of(step_open, &rc);
    snprintf(what, sizeof what, "the engine's open of a version %u log", version);
    AT_CHECK(rc == -EPROTONOSUPPORT, "%s: %d (%s), want -EPROTONOSUPPORT; it said: %s", what, rc, strerror(-rc), err);
    AT_CHECK(strstr(err, said) && strstr(err, "daxkit recover"), "%s said \"%s\", not \"%s\"", what, err, said);
    unchanged(log_path, log, ln, what), unchanged(path, data, dn, what);
    printf("%s: refused, unchanged; it said: %s", what, err);
    free(err);
    err = stderr_of(step_recover, &rc);
    snprintf(what, sizeof what, "recover (alog_recover_dir) of a version %u log", version);
    AT_CHECK(rc == 0, "%s: %d (0: one failed, none recovered; -10xy: x failed, y recovered)", what, rc);
    AT_CHECK(strstr(err, said) && strstr(err, log_path), "%s said \"%s\", not \"%s\" naming %s", what, err, said,
             log_path);
    unchanged(log_path, log, ln, what), unchanged(path, data, dn, what);
    printf("%s: counted failed, unchanged; it said: %s", what, err);
    free(err), free(log), free(data);
}

static void newer(void) {
    crash("0", 2, 40);
    refused(3, "written by a newer daxkit (log format 3, this library reads 1-2)");
    refused(0, "(log format 0, this library reads 1-2)");
    version_set(2);
    recover_and_check("the refused log marked version 2 again", 2);
    printf("newer: the committed work was kept: recovered to the model\n");
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "";
    void (*run)(void) = !strcmp(name, "v1-policy") ? v1_policy : !strcmp(name, "v1-applied") ? v1_applied
                      : !strcmp(name, "newer")     ? newer
                                                   : NULL;
    AT_CHECK(run, "usage: atomic_log_version v1-policy|v1-applied|newer [DIR]");
    at_setup_dir(argc - 1, argv + 1);
    model = mmap(NULL, FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    AT_CHECK(model != MAP_FAILED, "mmap: %s", strerror(errno));
    at_path(path, sizeof path, "ver.bin");
    snprintf(log_path, sizeof log_path, "%s/.daxkit/ver.bin.alog", at_dir);
    run();
    printf("PASS\n");
    return 0;
}
