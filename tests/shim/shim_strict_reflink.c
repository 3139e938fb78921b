/* Description: strict mode's appends on a page-cache medium with reflink (XFS), by argv[2]:
 *   drop  appends published by clone (DAXKIT_CLONE_MIN_BYTES set: the test's ENV) leave the file marked
 *         reflinked, and strict mode's fsync makes no kernel call -- so the mark stayed for good, and XFS
 *         looked every later overwrite's blocks up in its refcount tree (xfs_reflink_find_shared: ~4 % of a
 *         strict 4 KiB write's CPU samples). The staging slots are punched when given back, so nothing is
 *         shared: the fsync asks the file system to drop the mark, as sync mode's fsync does (counter
 *         reflink_unshares), once.
 *   copy  without DAXKIT_CLONE_MIN_BYTES strict mode publishes appends on the page cache by copy, never by
 *         clone (session 10): the log makes them durable, and a clone wrote the staged range back
 *         synchronously inside the append, left the file's pages out of the page cache and the file marked
 *         reflinked (counters relink_clones stays, relink_copies grows).
 * The bytes are checked through raw system calls. argv[1]: managed directory on XFS. Exit 0 pass, 1 fail,
 * 77 skip (drop: no clone made, nothing to drop). */
#include "shim_test.h"

static uint64_t counter(enum dk_counter c) {
    uint64_t v[DK_C_COUNT];
    CHECK(st_stats(getpid(), v), "stats");
    return v[c];
}

/* Appends 4 MiB ('a'..'d' per MiB) to a new file and fsyncs it; returns the descriptor. */
static int append_4m(const char *path) {
    static char big[1 << 20];
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    for (int i = 0; i < 4; i++) {
        memset(big, 'a' + i, sizeof big);
        st_write_all(fd, big, sizeof big); /* strict: logged, then published at once */
    }
    OK(fsync(fd));
    return fd;
}

static void check_bytes(int fd) {
    static char got[4096];
    for (int i = 0; i < 4; i++) {
        CHECK(syscall(SYS_pread64, fd, got, sizeof got, (off_t)i << 20) == (long)sizeof got, "raw pread %d", i);
        CHECK(got[0] == 'a' + i && got[4095] == 'a' + i, "MiB %d in the kernel file: '%c', want '%c'", i, got[0],
              'a' + i);
    }
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    const char *what = argc > 2 ? argv[2] : "";
    st_require_library();
    st_watchdog(60);
    char path[4200];
    snprintf(path, sizeof path, "%s/appended", dir);
    uint64_t clones = counter(DK_C_relink_clones), unshares = counter(DK_C_reflink_unshares);
    if (strcmp(what, "drop") == 0) {
        int fd = append_4m(path);
        uint64_t cloned = counter(DK_C_relink_clones) - clones, dropped = counter(DK_C_reflink_unshares) - unshares;
        if (cloned == 0) {
            printf("SKIP: no append was published by clone here (no reflink): no mark to drop\n");
            return 77;
        }
        CHECK(dropped >= 1, "%llu append(s) published by clone, and the fsync after them did not ask to drop the "
              "file's reflink mark (every later overwrite pays the file system's shared-block lookup)",
              (unsigned long long)cloned);
        uint64_t again = counter(DK_C_reflink_unshares);
        OK(fsync(fd));
        CHECK(counter(DK_C_reflink_unshares) == again, "a second fsync with no clone since unshared again");
        check_bytes(fd);
        OK(close(fd));
        OK(unlink(path));
        printf("ok: %llu clone(s), %llu reflink mark drop(s) at the fsync after them\n", (unsigned long long)cloned,
               (unsigned long long)dropped);
        return 0;
    }
    if (strcmp(what, "copy") == 0) {
        uint64_t copies = counter(DK_C_relink_copies);
        int fd = append_4m(path);
        uint64_t cloned = counter(DK_C_relink_clones) - clones, copied = counter(DK_C_relink_copies) - copies;
        CHECK(cloned == 0, "%llu append(s) of strict mode on the page cache published by clone, want by copy",
              (unsigned long long)cloned);
        CHECK(copied >= 1, "no append published by copy either (%llu)", (unsigned long long)copied);
        check_bytes(fd);
        OK(close(fd));
        OK(unlink(path));
        printf("ok: 4 MiB of appends published by %llu copies, no clone\n", (unsigned long long)copied);
        return 0;
    }
    fprintf(stderr, "usage: shim_strict_reflink DIR drop|copy\n");
    return 1;
}
