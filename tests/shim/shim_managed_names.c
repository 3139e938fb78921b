/* Description: which names reach a managed file. The library judges most names by their text (no readlink
 * of /proc/self/fd): an absolute name below the managed directory, or a relative one while the working
 * directory is below it -- unless the name climbs out ("..") or enters .daxkit; a name relative to another
 * directory descriptor, or from a working directory elsewhere, is resolved by the kernel. Each case opens a
 * file and checks, by the `opens` counter, whether the library adopted it; chdir and fchdir move the
 * working directory between the cases. argv[1]: the managed directory (a subdirectory of its mount, so the
 * mount-root shortcut does not apply). With argv[2] = "root", argv[1] is a mount root instead: every name
 * on its device is served (the shortcut skips the readlink), except names through its .daxkit area; and
 * tar cf's pattern (tar_cf_reads) reads no file's path from the kernel.
 * Exit 0 pass, 1 fail. */
#include <dirent.h>

#include "shim_test.h"

static const char *dir;

/* Opens `name` (relative to dirfd), uses it (lazy adoption judges a file at its first use, by the verdict
 * its name got at the open), closes it, and returns whether the library adopted it. */
static bool adopted(int dirfd, const char *name) {
    uint64_t before[DK_C_COUNT], after[DK_C_COUNT];
    CHECK(st_stats(getpid(), before), "no stats file");
    int fd = openat(dirfd, name, O_RDWR | O_CREAT, 0644);
    CHECK(fd >= 0, "open %s: %s", name, strerror(errno));
    OK(ftruncate(fd, 0));
    CHECK(st_stats(getpid(), after), "no stats file");
    OK(close(fd));
    return after[DK_C_opens] - before[DK_C_opens] == 1;
}

static void expect(int dirfd, const char *name, bool managed, const char *why) {
    bool got = adopted(dirfd, name);
    CHECK(got == managed, "%s: '%s' %s, expected %s", why, name, got ? "was served" : "was not served",
          managed ? "served" : "not served");
}

/* tar cf's pattern: a directory opened relative to the root's descriptor without O_DIRECTORY and fstat'ed
 * (lazy adoption leaves it pending until then), then each file opened relative to it, read and closed: the
 * files' own paths are not read from the kernel one by one (counter fd_path_reads: at most 2 for 20 files --
 * the first file's walk of the directory's areas; session 21's library read 21 on a mount root). `busy`:
 * with appends of another file staged meanwhile (tar's archive), so the directory's fstat adopts it
 * (pending.c: up_pending_fstat_done) rather than letting it pass (up_pending_fstat_dir). */
static void tar_cf_reads(bool busy) {
    enum { FILES = 20 };
    char tree[PATH_MAX], archive[PATH_MAX];
    st_path(tree, sizeof tree, dir, busy ? "tree.busy" : "tree");
    st_path(archive, sizeof archive, dir, "archive");
    int afd = busy ? OK(open(archive, O_WRONLY | O_CREAT | O_TRUNC, 0644)) : -1;
    if (busy) st_write_all(afd, "staged", 6); /* an active file: the epoch moved */
    mkdir(tree, 0755);
    for (int i = 0; i < FILES; i++) {
        char p[PATH_MAX];
        st_path(p, sizeof p, tree, st_fmt("f%d", i));
        int fd = OK(open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644));
        st_write_all(fd, "0123456789", 10);
        OK(close(fd));
    }
    uint64_t before[DK_C_COUNT], after[DK_C_COUNT];
    int rfd = OK(open(dir, O_RDONLY | O_DIRECTORY));
    CHECK(st_stats(getpid(), before), "no stats file");
    int tfd = OK(openat(rfd, busy ? "tree.busy" : "tree", O_RDONLY | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    OK(fstat(tfd, &st));
    CHECK(S_ISDIR(st.st_mode), "tree is no directory");
    for (int i = 0; i < FILES; i++) {
        int fd = OK(openat(tfd, st_fmt("f%d", i), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
        char got[16];
        CHECK(read(fd, got, sizeof got) == 10 && !memcmp(got, "0123456789", 10), "read of f%d", i);
        OK(close(fd));
    }
    CHECK(st_stats(getpid(), after), "no stats file");
    OK(close(tfd));
    OK(close(rfd));
    if (busy) OK(close(afd));
    uint64_t reads = after[DK_C_fd_path_reads] - before[DK_C_fd_path_reads];
    CHECK(reads <= 2, "%llu descriptor paths read from the kernel for %d files opened relative to a directory "
          "opened without O_DIRECTORY (%s)", (unsigned long long)reads, FILES, busy ? "a file active" : "idle");
    printf("ok: tar cf's pattern (%s): %llu descriptor paths read for %d files\n", busy ? "a file active" : "idle",
           (unsigned long long)reads, FILES);
}

/* The managed directory is a mount root: names are judged by their components alone. */
static void mount_root_cases(void) {
    char sub[PATH_MAX], area[PATH_MAX], abs_in[PATH_MAX], abs_area[PATH_MAX];
    st_path(sub, sizeof sub, dir, "sub");
    st_path(area, sizeof area, dir, ".daxkit");
    mkdir(sub, 0755);
    mkdir(area, 0755); /* the library made it already when it has a staging pool */
    st_path(abs_in, sizeof abs_in, sub, "abs");
    st_path(abs_area, sizeof abs_area, area, "names-test");
    expect(AT_FDCWD, abs_in, true, "an absolute name below the mount root");
    expect(AT_FDCWD, abs_area, false, "an absolute name inside the mount root's .daxkit area");
    OK(chdir(sub));
    expect(AT_FDCWD, "rel", true, "a relative name, working directory below the mount root");
    expect(AT_FDCWD, "../up", true, "a name climbing with .. (still on the mount: served)");
    expect(AT_FDCWD, "../.daxkit/names-test2", false, "a relative name into the .daxkit area");
    expect(AT_FDCWD, "./../.daxkit/../.daxkit/names-test3", false, "a name through .daxkit twice");
    OK(chdir(dir));
    expect(AT_FDCWD, ".daxkit/names-test4", false, "a relative name into .daxkit from the mount root");
    expect(AT_FDCWD, ".daxkit-not", true, "a name that only starts like .daxkit");
    int dfd = OK(open(sub, O_RDONLY | O_DIRECTORY));
    expect(dfd, "at", true, "a name relative to a directory descriptor below the mount root");
    OK(close(dfd));
    printf("ok: on a managed mount root every name is served except those through .daxkit\n");
}

int main(int argc, char **argv) {
    st_watchdog(60);
    st_require_library();
    dir = st_dir(argc, argv);
    if (argc > 2 && !strcmp(argv[2], "root")) {
        mount_root_cases();
        tar_cf_reads(false);
        tar_cf_reads(true);
        return 0;
    }
    char sub[PATH_MAX], out[PATH_MAX], abs_in[PATH_MAX], abs_out[PATH_MAX], link[PATH_MAX];
    st_path(sub, sizeof sub, dir, "sub");
    snprintf(out, sizeof out, "%s/../outside", dir);
    char lookalike[PATH_MAX], area[PATH_MAX];
    st_path(lookalike, sizeof lookalike, dir, ".daxkit-not");
    st_path(area, sizeof area, dir, ".daxkit");
    mkdir(sub, 0755);
    mkdir(out, 0755);
    mkdir(lookalike, 0755);
    mkdir(area, 0755); /* the library's own area: never served */
    st_path(abs_in, sizeof abs_in, sub, "abs");
    st_path(abs_out, sizeof abs_out, out, "abs");
    st_path(link, sizeof link, dir, "escape"); /* a link below the directory to one beside it */
    unlink(link);
    OK(symlink(out, link));

    expect(AT_FDCWD, abs_in, true, "an absolute name below the directory");
    expect(AT_FDCWD, abs_out, false, "an absolute name beside it");
    char climb[PATH_MAX + 32];
    snprintf(climb, sizeof climb, "%s/../outside/climb", dir);
    expect(AT_FDCWD, climb, false, "an absolute name that climbs out with ..");

    OK(chdir(sub));
    expect(AT_FDCWD, "rel", true, "a relative name, working directory below");
    expect(AT_FDCWD, "./dot", true, "a relative name with a . component");
    expect(AT_FDCWD, "../../outside/rel", false, "a relative name that climbs out");
    expect(AT_FDCWD, "../.daxkit-not/x", true, "a name that only starts like .daxkit");
    expect(AT_FDCWD, "../.daxkit/names-test", false, "a name inside the library's .daxkit area");
    unlink("../.daxkit/names-test");
    OK(chdir(dir));
    /* Judged by its text: named below the directory, it is served (as on a managed mount root, where any
     * name on the device is); the same file by a name the kernel resolves is not. */
    expect(AT_FDCWD, "escape/through-link", true, "a plain name through a link below the directory (same device)");
    expect(AT_FDCWD, "sub/../escape/through-link2", false, "a name through that link with .. (kernel-resolved)");

    OK(chdir(out));
    expect(AT_FDCWD, "rel", false, "a relative name after chdir beside the directory");
    char via[PATH_MAX + 32];
    snprintf(via, sizeof via, "../%s/sub/via", strrchr(dir, '/') + 1);
    expect(AT_FDCWD, via, true, "a relative name from beside the directory into it (kernel-resolved)");

    int dfd = OK(open(sub, O_RDONLY | O_DIRECTORY));
    expect(dfd, "at", true, "a name relative to a directory descriptor below it");
    OK(fchdir(dfd));
    expect(AT_FDCWD, "after-fchdir", true, "a relative name after fchdir into the directory");
    int ofd = OK(open(out, O_RDONLY | O_DIRECTORY));
    OK(fchdir(ofd));
    expect(AT_FDCWD, "after-fchdir", false, "a relative name after fchdir beside it");
    expect(dfd, "at2", true, "a name relative to a directory descriptor below it, working directory beside");
    OK(close(dfd));
    OK(close(ofd));
    /* The verdict for a directory descriptor follows the directory, not the number: glibc's closedir
     * closes without the interposed close, so a number reused through opendir must be found out. */
    DIR *in_dir = opendir(sub);
    CHECK(in_dir, "opendir %s: %s", sub, strerror(errno));
    int num = dirfd(in_dir);
    expect(num, "od", true, "a name relative to an opendir descriptor below the directory");
    closedir(in_dir);
    DIR *out_dir = opendir(out);
    CHECK(out_dir, "opendir %s: %s", out, strerror(errno));
    if (dirfd(out_dir) != num) NOTE("opendir did not reuse descriptor %d; the reuse case is not exercised", num);
    expect(dirfd(out_dir), "od", false, "a name relative to an opendir descriptor beside it (number reused)");
    closedir(out_dir);

    /* The managed directory by its own name is a directory (no fstat at its open) -- unless O_TMPFILE
     * makes an unnamed file in it. */
    uint64_t before[DK_C_COUNT], after[DK_C_COUNT];
    CHECK(st_stats(getpid(), before), "no stats file");
    int tfd = open(dir, O_RDWR | O_TMPFILE, 0600);
    if (tfd < 0) NOTE("O_TMPFILE refused here (%s): not exercised", strerror(errno));
    else {
        OK(ftruncate(tfd, 0)); /* its first use */
        CHECK(st_stats(getpid(), after), "no stats file");
        CHECK(after[DK_C_opens] - before[DK_C_opens] == 1, "an O_TMPFILE file in the directory was not served");
        OK(close(tfd));
    }
    int rfd = OK(open(dir, O_RDONLY));
    OK(fsync(rfd)); /* SQLite's directory sync */
    OK(close(rfd));
    printf("ok: names are judged as the kernel resolves them (absolute, relative, .., links, chdir, fchdir)\n");
    return 0;
}
