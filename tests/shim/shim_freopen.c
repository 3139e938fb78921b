/* freopen() of a stream fopen/fdopen opened on a managed file (review 11, finding 4: SIGSEGV inside glibc's
 * freopen, in every mode, the stream's buffered bytes lost). The same steps run on files outside DAXKIT_DIR
 * (glibc's own file streams: the kernel's answers) and on managed files, and their transcripts -- results,
 * errno, what reads return, descriptor numbers kept, file contents -- must be equal:
 *   1. fopen "w", fputs, freopen onto another managed file "w", fputs (the buffered line reaches the first)
 *   2. fopen "a", fputs, freopen onto a file outside DAXKIT_DIR "a", fputs
 *   3. fopen "w", fputs, freopen(NULL, "r"): the mode changes, the line reads back, a write is refused
 *   4. freopen(NULL, "a+"): appends at the end, rewind, reads the whole file
 *   5. log rotation: fopen "a", fputs, rename, freopen of the name "a", fputs
 *   6. fdopen of an O_RDWR descriptor, freopen onto a new file "w+": write, rewind, read
 *   7. freopen onto a name that cannot be opened: NULL and ENOENT; the buffered bytes reached the old file
 * argv[1]: managed directory (its parent is not managed). After the transcripts, every managed file is
 * compared with its kernel twin without the library (shim_check image). */
#include "shim_test.h"

#define DK_MIN_T(a, b) ((a) < (b) ? (a) : (b))

static char tr[8192];
static size_t trn;

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tr + trn, sizeof tr - trn, fmt, ap);
    va_end(ap);
    if (n > 0) trn = DK_MIN_T(trn + (size_t)n, sizeof tr - 1);
}

static void contents_as(const char *dir, const char *name, const char *label) {
    char p[PATH_MAX], b[256];
    st_path(p, sizeof p, dir, name);
    int fd = open(p, O_RDONLY);
    if (fd < 0) {
        say(" [%s: %s]", label, strerror(errno));
        return;
    }
    ssize_t r = read(fd, b, sizeof b - 1);
    b[r > 0 ? r : 0] = 0;
    close(fd);
    say(" [%s: '%s']", label, b);
}
static void contents(const char *dir, const char *name) { contents_as(dir, name, name); }

static const char *const files[] = {"a.log", "b.log", "d.log", "r.log", "r.log.1", "e.log", "f.log", "g.log"};

/* dir: where the files live; out: the other directory (outside DAXKIT_DIR in both runs); tag: name prefix there */
static void run(const char *dir, const char *out, const char *tag) {
    char p[PATH_MAX], q[PATH_MAX], line[128];
    trn = 0;
    tr[0] = 0;
    /* 1 */
    st_path(p, sizeof p, dir, "a.log");
    FILE *fp = fopen(p, "w");
    CHECK(fp, "fopen %s: %s", p, strerror(errno));
    int fd0 = fileno(fp);
    fputs("first\n", fp);
    st_path(q, sizeof q, dir, "b.log");
    FILE *r = freopen(q, "w", fp);
    say("1: freopen %s errno %d, fd kept %d;", r == fp ? "same" : r ? "other" : "NULL", r ? 0 : errno,
        r && fileno(r) == fd0);
    if (r) {
        say(" fputs %d", fputs("second\n", r));
        say(" fclose %d", fclose(r));
    }
    contents(dir, "a.log");
    contents(dir, "b.log");
    /* 2 */
    st_path(p, sizeof p, dir, "c.log");
    fp = fopen(p, "a");
    fputs("one\n", fp);
    snprintf(q, sizeof q, "%s/%s-c-out.log", out, tag);
    unlink(q);
    r = freopen(q, "a", fp);
    say("\n2: freopen %s errno %d;", r == fp ? "same" : r ? "other" : "NULL", r ? 0 : errno);
    if (r) {
        say(" fputs %d ftell %ld", fputs("two\n", r), ftell(r));
        say(" fclose %d", fclose(r));
    }
    contents(dir, "c.log");
    char nm[64];
    snprintf(nm, sizeof nm, "%s-c-out.log", tag);
    contents_as(out, nm, "c-out.log");
    /* 3 */
    st_path(p, sizeof p, dir, "d.log");
    fp = fopen(p, "w");
    fd0 = fileno(fp);
    fputs("hello world\n", fp);
    r = freopen(NULL, "r", fp);
    say("\n3: freopen(NULL, r) %s errno %d, fd kept %d;", r == fp ? "same" : r ? "other" : "NULL", r ? 0 : errno,
        r && fileno(r) == fd0);
    if (r) {
        say(" fgets '%s'", fgets(line, sizeof line, r) ? line : "(null)");
        errno = 0;
        int w = fputs("nope\n", r);
        say(" fputs %d ferror %d;", w, ferror(r) != 0);
        clearerr(r);
        /* 4 */
        FILE *r2 = freopen(NULL, "a+", r);
        say(" freopen(NULL, a+) %s errno %d;", r2 == fp ? "same" : r2 ? "other" : "NULL", r2 ? 0 : errno);
        if (r2) {
            say(" fputs %d", fputs("more\n", r2));
            rewind(r2);
            size_t n = fread(line, 1, sizeof line - 1, r2);
            line[n] = 0;
            say(" fread %zu '%s'", n, line);
            say(" fclose %d", fclose(r2));
        }
    }
    contents(dir, "d.log");
    /* 5 */
    st_path(p, sizeof p, dir, "r.log");
    st_path(q, sizeof q, dir, "r.log.1");
    fp = fopen(p, "a");
    fputs("x\n", fp);
    fflush(fp);
    fputs("y\n", fp); /* still buffered at the rotation: reaches the renamed file */
    rename(p, q);
    r = freopen(p, "a", fp);
    say("\n5: freopen %s errno %d;", r == fp ? "same" : r ? "other" : "NULL", r ? 0 : errno);
    if (r) {
        say(" fputs %d", fputs("z\n", r));
        say(" fclose %d", fclose(r));
    }
    contents(dir, "r.log");
    contents(dir, "r.log.1");
    /* 6 */
    st_path(p, sizeof p, dir, "e.log");
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(fd, "0123456789", 10);
    lseek(fd, 0, SEEK_SET);
    fp = fdopen(fd, "r+");
    say("\n6: fgetc '%c';", fgetc(fp));
    st_path(q, sizeof q, dir, "f.log");
    r = freopen(q, "w+", fp);
    say(" freopen %s errno %d, fd kept %d;", r == fp ? "same" : r ? "other" : "NULL", r ? 0 : errno,
        r && fileno(r) == fd);
    if (r) {
        say(" fputs %d", fputs("abc", r));
        rewind(r);
        say(" fgets '%s'", fgets(line, sizeof line, r) ? line : "(null)");
        say(" ftell %ld", ftell(r));
        say(" fclose %d", fclose(r));
    }
    contents(dir, "e.log");
    contents(dir, "f.log");
    /* 7 */
    st_path(p, sizeof p, dir, "g.log");
    fp = fopen(p, "w");
    fputs("kept\n", fp);
    st_path(q, sizeof q, dir, "no/such/dir");
    errno = 0;
    r = freopen(q, "w", fp);
    say("\n7: freopen %s errno %s", r ? "stream" : "NULL", r ? "-" : strerror(errno));
    contents(dir, "g.log");
    say("\n");
}

int main(int argc, char **argv) {
    if (argc < 2) SKIP("usage: shim_freopen DIR");
    st_watchdog(60);
    char plain[PATH_MAX];
    snprintf(plain, sizeof plain, "%s/../freopen-kernel", argv[1]);
    mkdir(plain, 0755);
    static char k[sizeof tr];
    char up[PATH_MAX];
    snprintf(up, sizeof up, "%s/..", argv[1]);
    run(plain, up, "k");
    memcpy(k, tr, sizeof k);
    run(argv[1], up, "d");
    printf("kernel:\n%sdaxkit:\n%s", k, tr);
    CHECK(!strcmp(k, tr), "the transcripts differ (above)");
    int bad = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char mp[PATH_MAX], kp[PATH_MAX];
        st_path(mp, sizeof mp, argv[1], files[i]);
        st_path(kp, sizeof kp, plain, files[i]);
        if (st_check("image", mp, kp) != 0) {
            NOTE("%s differs from the kernel's without the library", files[i]);
            bad++;
        }
    }
    CHECK(bad == 0, "%d file(s) differ", bad);
    printf("ok: freopen of a managed file's stream behaves as glibc's on the kernel path\n");
    return 0;
}
