/* Description: relative seeks on stdio streams of managed files. glibc's cookie streams (what a managed
 * fopen returns) lose the position on fseek(fp, 0, SEEK_CUR) -- the call C requires between output and
 * input -- after output that followed a seek into buffered input; the library makes such seeks absolute.
 * Checks the difftester's shrunk case and the usual read / seek / write / seek / read pattern of an "r+"
 * stream: positions and bytes as C defines them. argv[1]: managed directory. */
#include "shim_test.h"

static void shrunk_case(const char *path) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    CHECK(ftruncate(fd, 2111058) == 0, "ftruncate: %s", strerror(errno));
    FILE *f = fopen(path, "r+");
    CHECK(f != NULL, "fopen: %s", strerror(errno));
    CHECK(fseek(f, 1, SEEK_SET) == 0 && fflush(f) == 0, "fseek/fflush");
    off_t pos = lseek(fileno(f), 0, SEEK_CUR);
    CHECK(pos == 1, "descriptor offset after fflush: %lld, want 1", (long long)pos);
    CHECK(fseeko(f, pos, SEEK_SET) == 0, "fseeko");
    CHECK(fputs("x", f) >= 0, "fputs");
    CHECK(fseek(f, 0, SEEK_CUR) == 0, "fseek(0, SEEK_CUR)");
    long t = ftell(f);
    CHECK(t == 2, "ftell after writing one byte at 1: %ld, want 2", t);
    CHECK(fclose(f) == 0, "fclose");
    char c = 0;
    CHECK(pread(fd, &c, 1, 1) == 1 && c == 'x', "byte 1 is not the one written");
    close(fd);
}

static void read_seek_write(const char *path) {
    FILE *f = fopen(path, "w+");
    CHECK(f != NULL, "fopen w+: %s", strerror(errno));
    for (int i = 0; i < 20000; i++) fputc('a' + i % 26, f);
    CHECK(fseek(f, 100, SEEK_SET) == 0, "fseek 100");
    char buf[16];
    CHECK(fread(buf, 1, 10, f) == 10 && buf[0] == 'a' + 100 % 26, "fread at 100");
    CHECK(fseek(f, 0, SEEK_CUR) == 0, "fseek before writing");
    CHECK(fwrite("XYZ", 1, 3, f) == 3, "fwrite");
    CHECK(fseek(f, 0, SEEK_CUR) == 0, "fseek before reading");
    CHECK(ftell(f) == 113, "ftell after read 10 + write 3 from 100: %ld, want 113", ftell(f));
    CHECK(fread(buf, 1, 1, f) == 1 && buf[0] == 'a' + 113 % 26, "byte after the write: '%c', want '%c'", buf[0],
          'a' + 113 % 26);
    CHECK(fseek(f, -4, SEEK_CUR) == 0 && ftell(f) == 110, "fseek(-4, SEEK_CUR): %ld, want 110", ftell(f));
    CHECK(fread(buf, 1, 3, f) == 3 && !memcmp(buf, "XYZ", 3), "the written bytes read back");
    CHECK(fseek(f, -1, SEEK_SET) != 0 && errno == EINVAL, "a seek before the start is EINVAL");
    CHECK(fclose(f) == 0, "fclose");
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_require_library();
    st_watchdog(60);
    char path[4200];
    snprintf(path, sizeof path, "%s/seek-shrunk", dir);
    shrunk_case(path);
    snprintf(path, sizeof path, "%s/seek-rsw", dir);
    read_seek_write(path);
    printf("ok: relative seeks on managed stdio streams\n");
    return 0;
}
