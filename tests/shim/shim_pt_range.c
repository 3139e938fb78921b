/* Description: what a pass-through write tells the library it changed (review 14, finding 11). After a
 * write the kernel makes into a file the library maps, its pages of the written range are dropped on DAX
 * (upath/map.c up_map_kernel_wrote: Linux 6.1's stale zero pages); a 4 KiB pwrite through a descriptor the
 * kernel serves (here: shared with a fork child) dropped the whole file's mapping -- every later served read
 * refaulted the working set. Counter pt_changed_bytes (bytes a pass-through change named, DAX or not):
 * a 4 KiB pwrite at 1 MiB into an 8 MiB file names 4 KiB; a write() at the shared offset and an ftruncate
 * name the whole file (their range is not known: shim.h dk_pt_end_written); and the bytes read back are the
 * written ones. argv[1]: managed dir. */
#include <sys/wait.h>

#include "shim_test.h"

#define FILE_BYTES (8u << 20)

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_require_library();
    st_watchdog(60);
    char path[4200];
    snprintf(path, sizeof path, "%s/pt-range", dir);
    static uint8_t buf[FILE_BYTES], got[4096];
    st_fill(buf, 7, 0, FILE_BYTES);
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, buf, FILE_BYTES);
    OK(fsync(fd));
    CHECK(pread(fd, got, sizeof got, 0) == (ssize_t)sizeof got, "pread"); /* mapped and served */
    int go[2];
    OK(pipe(go));
    pid_t child = fork(); /* the descriptor is shared with the child now: the kernel serves it */
    CHECK(child >= 0, "fork: %s", strerror(errno));
    if (child == 0) {
        char c;
        _exit(read(go[0], &c, 1) == 1 ? 0 : 1);
    }
    uint64_t pt0 = st_counter(DK_C_passthrough), b0 = st_counter(DK_C_pt_changed_bytes);
    memset(got, 0x5a, sizeof got);
    CHECK(pwrite(fd, got, sizeof got, 1 << 20) == (ssize_t)sizeof got, "pwrite: %s", strerror(errno));
    uint64_t pt1 = st_counter(DK_C_passthrough), b1 = st_counter(DK_C_pt_changed_bytes);
    if (pt1 == pt0) SKIP("the pwrite through a descriptor shared with a fork child was served, not passed through");
    CHECK(b1 - b0 == sizeof got, "a 4 KiB pass-through pwrite at 1 MiB named %llu bytes as changed (want 4096: only "
          "its range of a DAX mapping is dropped)", (unsigned long long)(b1 - b0));
    CHECK(lseek(fd, 0, SEEK_SET) == 0, "lseek");
    CHECK(write(fd, got, 100) == 100, "write");
    uint64_t b2 = st_counter(DK_C_pt_changed_bytes);
    CHECK(b2 - b1 == FILE_BYTES, "a write() at the shared offset named %llu bytes (want the whole file, %u: its range "
          "is not known)", (unsigned long long)(b2 - b1), FILE_BYTES);
    uint8_t back[4096];
    CHECK(pread(fd, back, sizeof back, 1 << 20) == (ssize_t)sizeof back && !memcmp(back, got, sizeof back),
          "the pwrite's bytes do not read back");
    CHECK(pread(fd, back, 100, 0) == 100 && !memcmp(back, got, 100), "the write's bytes do not read back");
    CHECK(write(go[1], "x", 1) == 1, "release the child");
    int st;
    CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child");
    OK(close(fd));
    printf("ok: a 4 KiB pass-through pwrite named %llu bytes, a write() %llu (file %u)\n", (unsigned long long)(b1 - b0),
           (unsigned long long)(b2 - b1), FILE_BYTES);
    return 0;
}
