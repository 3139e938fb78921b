/* Description: strict mode's checkpoint lock under threads (session 9: the write path's read side is
 * asymmetric -- a plain store into the thread's reader record -- and a writer of the lock closes that fast
 * path, runs membarrier and waits for the records to clear). The real strict path (libdkcore: up_pwrite,
 * up_pread) on a tmpfs directory with DAXKIT_PERSIST=flush and every staged overwrite waiting for the
 * checkpoint (DAXKIT_STRICT_APPLY=checkpoint): WRITERS threads overwrite 4 KiB blocks of their own region of
 * one file, each block stamped with (thread, sequence), while another thread runs checkpoints (which apply
 * the waiting overwrites and reset the log and the table of waiting overwrites) as fast as it can, and
 * every writer reads a block of its own back now and then (a read applies the file's waiting overwrites
 * first). At the end every block must hold its thread's last write, read through the library and read by
 * the kernel after a last checkpoint.
 *
 * A checkpoint that ran while a write was between its entry in the table and its record would reset the
 * table under it: the write's entry is never applied, and its bytes are lost from the file (they stay only
 * in the log, for recovery). `strict_ck_threads broken` runs the test build's variant whose checkpoint takes
 * the rwlock only (the fast readers never take it) and passes only when the check catches lost writes (or
 * the broken apply crashes: the workload then runs in a child, see main).
 * Exit 0 pass, 1 fail, 77 skip (no /dev/shm, or no membarrier: the fast path is never taken). */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "upath/guard.h"
#include "upath/internal.h"

/* The user-space path's entry points (src/upath/upath.h), declared here as strict_cost.c does. */
struct up_slot;
void up_init(void);
int up_adopt(int fd, int oflags, const char *path);
struct up_slot *up_serving(int fd);
ssize_t up_pwrite(struct up_slot *s, int fd, const void *buf, size_t n, off_t off);
ssize_t up_pread(struct up_slot *s, int fd, void *buf, size_t n, off_t off);
void up_strict_checkpoint_all(void);

#define WRITERS 3u
#define BLOCKS_PER_WRITER 64u
#define BLOCK 4096u
#define WRITES_PER_WRITER 30000u

static int fd;
static struct up_slot *slot;
static uint32_t last_seq[WRITERS][BLOCKS_PER_WRITER]; /* the model: each block's last acknowledged write + 1 */
static unsigned writers_done, checkpoints;
static unsigned long failures;

static void stamp(unsigned char *b, uint32_t t, uint32_t seq) {
    for (unsigned i = 0; i < BLOCK; i += 8) {
        memcpy(b + i, &t, 4);
        memcpy(b + i + 4, &seq, 4);
    }
}

static uint64_t block_off(uint32_t t, uint32_t k) { return ((uint64_t)t * BLOCKS_PER_WRITER + k) * BLOCK; }

static void *writer(void *arg) {
    uint32_t t = (uint32_t)(uintptr_t)arg;
    static _Thread_local unsigned char buf[BLOCK], got[BLOCK];
    uint32_t rng = t * 2654435761u + 1;
    for (uint32_t seq = 1; seq <= WRITES_PER_WRITER; seq++) {
        rng = rng * 1103515245u + 12345u;
        uint32_t k = (rng >> 8) % BLOCKS_PER_WRITER;
        stamp(buf, t, seq);
        if (up_pwrite(slot, fd, buf, BLOCK, (off_t)block_off(t, k)) != BLOCK) {
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
            printf("FAIL: writer %u: write %u failed\n", t, seq);
            break;
        }
        last_seq[t][k] = seq;
        if (seq % 97 == 0) { /* read one of its blocks back: the read applies the file's waiting overwrites */
            uint32_t j = (rng >> 16) % BLOCKS_PER_WRITER;
            if (up_pread(slot, fd, got, BLOCK, (off_t)block_off(t, j)) != BLOCK) continue;
            stamp(buf, t, last_seq[t][j]);
            if (last_seq[t][j] && memcmp(buf, got, BLOCK) != 0) {
                if (__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED) <= 3)
                    printf("FAIL: writer %u read block %u back after write %u: not its last write (%u)\n", t, j,
                           seq, last_seq[t][j]);
            }
        }
    }
    __atomic_add_fetch(&writers_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *checkpointer(void *arg) {
    (void)arg;
    while (__atomic_load_n(&writers_done, __ATOMIC_ACQUIRE) < WRITERS) {
        up_strict_checkpoint_all();
        checkpoints++;
    }
    return NULL;
}

/* Every block holds its writer's last write: read through the library, then by the kernel (pread of the
 * file, after a last checkpoint). Returns the blocks that do not. */
static unsigned check_blocks(bool kernel) {
    static unsigned char want[BLOCK], got[BLOCK];
    unsigned bad = 0;
    for (uint32_t t = 0; t < WRITERS; t++)
        for (uint32_t k = 0; k < BLOCKS_PER_WRITER; k++) {
            if (!last_seq[t][k]) continue;
            ssize_t r = kernel ? pread(fd, got, BLOCK, (off_t)block_off(t, k))
                               : up_pread(slot, fd, got, BLOCK, (off_t)block_off(t, k));
            stamp(want, t, last_seq[t][k]);
            if (r != BLOCK || memcmp(want, got, BLOCK) != 0) {
                uint32_t seq = 0;
                memcpy(&seq, got + 4, 4);
                if (bad++ < 3)
                    printf("%s: writer %u block %u holds write %u, not its last write %u\n",
                           kernel ? "kernel read" : "read", t, k, seq, last_seq[t][k]);
            }
        }
    return bad;
}

int main(int argc, char **argv) {
    bool broken = argc > 1 && strcmp(argv[1], "broken") == 0;
    struct stat sb;
    if (stat("/dev/shm", &sb) != 0) return printf("SKIP: no /dev/shm\n"), 77;
    char dir[] = "/dev/shm/dk-strict-ck.XXXXXX";
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    if (broken) {
        /* The broken lock lets a checkpoint apply a waiting write whose entry is half made: besides losing
         * writes, the apply can follow a pointer not stored yet (SIGSEGV in ~2% of runs). Either way the
         * broken protocol is caught; the workload runs in a child so that a crash is an answer too. */
        pid_t pid = fork();
        if (pid < 0) return perror("fork"), 1;
        if (pid > 0) {
            int status = 0;
            if (waitpid(pid, &status, 0) != pid) return perror("waitpid"), 1;
            if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS)) {
                char cmd[160];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
                if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
                printf("ok: the broken checkpoint lock crashed an apply (signal %d) and the check caught it\n",
                       WTERMSIG(status));
                return 0;
            }
            return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        }
    }
    setenv("DAXKIT_DIR", dir, 1);
    setenv("DAXKIT_MODE", "strict", 1);
    setenv("DAXKIT_PERSIST", "flush", 1);
    setenv("DAXKIT_STATS", "0", 1);
    unsetenv("DAXKIT_STRICT_INLINE_BYTES");
    setenv("DAXKIT_STRICT_APPLY", "checkpoint", 1); /* every staged overwrite waits in the table */
    up_init();
    if (!up_guard_asym) return printf("SKIP: no membarrier here: the checkpoint lock has no fast path\n"), 77;
    char path[128];
    snprintf(path, sizeof path, "%s/data", dir);
    fd = open(path, O_RDWR | O_CREAT, 0644);
    uint64_t bytes = (uint64_t)WRITERS * BLOCKS_PER_WRITER * BLOCK;
    if (fd < 0 || fallocate(fd, 0, 0, (off_t)bytes) != 0) return perror("data file"), 1;
    if (up_adopt(fd, O_RDWR, path) != 0 || !(slot = up_serving(fd))) return printf("FAIL: the file is not served\n"), 1;
#ifdef DAXKIT_TEST_BUILD
    if (broken) up_strict_test_broken = UP_STRICT_BROKEN_CK_NO_DRAIN;
#else
    if (broken) return printf("SKIP: the broken variant needs a test build\n"), 77;
#endif
    pthread_t th[WRITERS + 1];
    for (uintptr_t t = 0; t < WRITERS; t++) pthread_create(&th[t], NULL, writer, (void *)t);
    pthread_create(&th[WRITERS], NULL, checkpointer, NULL);
    for (unsigned t = 0; t <= WRITERS; t++) pthread_join(th[t], NULL);
    unsigned bad = check_blocks(false);
    up_strict_checkpoint_all();
    unsigned bad_kernel = check_blocks(true);
    printf("%u writers x %u 4 KiB overwrites, %u checkpoints meanwhile: %u of %u blocks not their last write "
           "(read), %u (kernel read after a checkpoint), %lu failed reads back during the run\n",
           WRITERS, WRITES_PER_WRITER, checkpoints, bad, WRITERS * BLOCKS_PER_WRITER, bad_kernel, failures);
    close(fd);
    unlink(path);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
    bool lost = bad || bad_kernel || failures;
    if (broken) {
        if (lost) printf("ok: the broken checkpoint lock lost writes and the check caught it\n");
        else printf("FAIL: the broken variant (checkpoint without waiting for the fast readers) lost nothing\n");
        return lost ? 0 : 1;
    }
    if (checkpoints < 10) return printf("FAIL: only %u checkpoints ran during the writes\n", checkpoints), 1;
    return lost ? 1 : 0;
}
