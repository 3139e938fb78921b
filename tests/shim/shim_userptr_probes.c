/* Description: the program half of userptr_probes.sh (session 27, review 27 #2): 1,000 rounds of calls whose
 * struct or name lies off the calling thread's stack -- pwritev with a heap iovec array and with one across a
 * page boundary, a heap struct flock's F_SETLK lock and unlock, fstatat(fd, "", AT_EMPTY_PATH) with a string
 * literal -- on a managed, served file. The script counts the library's probes (common/userptr.c: a
 * FUTEX_WAIT_PRIVATE of value 0x5ca1ab1e) with strace: each page is probed once a thread, not at every call.
 * Usage: shim_userptr_probes DIR. Exit 0 when every call succeeded. */
#include <sys/uio.h>

#include "shim_test.h"

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "probes");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static char buf[8192];
    memset(buf, 'p', sizeof buf);
    st_write_all(fd, buf, sizeof buf);
    OK(fsync(fd));
    for (int i = 0; i < 24; i++) OK(pread(fd, buf, 16, 0)); /* served */
    struct iovec *heap = malloc(2 * sizeof *heap);
    char *page = aligned_alloc(4096, 8192); /* an array whose two entries lie on two pages */
    CHECK(heap && page, "malloc");
    struct iovec *across = (struct iovec *)(page + 4096 - sizeof *across);
    heap[0] = across[0] = (struct iovec){.iov_base = buf, .iov_len = 64};
    heap[1] = across[1] = (struct iovec){.iov_base = buf + 64, .iov_len = 64};
    struct flock *l = malloc(sizeof *l);
    CHECK(l, "malloc");
    struct stat st;
    for (int i = 0; i < 1000; i++) {
        CHECK(pwritev(fd, heap, 2, (i % 32) * 128) == 128, "pwritev (heap array): %s", strerror(errno));
        CHECK(pwritev(fd, across, 2, (i % 32) * 128) == 128, "pwritev (array across a page): %s", strerror(errno));
        *l = (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1};
        CHECK(fcntl(fd, F_SETLK, l) == 0, "F_SETLK (heap struct): %s", strerror(errno));
        l->l_type = F_UNLCK;
        CHECK(fcntl(fd, F_SETLK, l) == 0, "F_UNLCK (heap struct): %s", strerror(errno));
        CHECK(fstatat(fd, "", &st, AT_EMPTY_PATH) == 0 && st.st_size == 8192, "fstatat \"\": %s", strerror(errno));
    }
    OK(close(fd));
    printf("ok: 1,000 rounds of 5 calls with structs and names off the stack\n");
    return 0;
}
