/* Description: the published-size record file (<root>/.daxkit/<tag>.sizes: 4 KiB slots, a sparse 4 MiB file)
 * takes 4 KiB of the medium for a record, not a 2 MiB huge page. On a huge-page tmpfs a slot's page used to be
 * allocated by fallocate, which takes a 2 MiB page there, cleared at the slot's first store: 5-12 ms of CPU a
 * process on the session-22 machine, the largest part of a posix-mode SQLite WAL run's excess over the kernel
 * (session 22). Appends 9,000 bytes to a new file and fsyncs (a relink over page boundaries: a size record),
 * then reports the record file's allocated bytes (st_blocks) while the process still holds it.
 * argv[1]: managed directory. Prints "record_file_bytes N"; exit 0 (printed), 1 (no record file), 2 (set-up). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) return fprintf(stderr, "usage: %s MANAGED_DIR\n", argv[0]), 2;
    char path[4096], buf[9000];
    snprintf(path, sizeof path, "%s/f", argv[1]);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    memset(buf, 'r', sizeof buf);
    if (fd < 0 || write(fd, buf, sizeof buf) != (ssize_t)sizeof buf || fsync(fd) != 0)
        return perror("open/write/fsync"), 2;
    snprintf(path, sizeof path, "%s/.daxkit", argv[1]);
    DIR *d = opendir(path);
    if (!d) return perror(path), 1;
    long long bytes = -1;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        struct stat st;
        if (n < 6 || strcmp(e->d_name + n - 6, ".sizes") != 0) continue;
        if (fstatat(dirfd(d), e->d_name, &st, 0) != 0) return perror(e->d_name), 2;
        bytes = (long long)st.st_blocks * 512;
    }
    closedir(d);
    if (bytes < 0) return fprintf(stderr, "no .sizes record file in %s after a tearable publish\n", path), 1;
    printf("record_file_bytes %lld\n", bytes);
    close(fd);
    return 0;
}
