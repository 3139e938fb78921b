/* Description: strict mode's metadata calls on a stuck file system outside the managed roots (review 15,
 * finding 5). A strict create, rename or unlink opened the parent directory of ANY path in a library window,
 * and every other thread's pass-through read/write waits while a window is open: a create below a FUSE mount
 * that never answers (NFS with its server gone, an automount) stalled the whole process's I/O, and an
 * in-process FUSE server deadlocked. Here: a FUSE mount whose INIT is never read, a thread creating a file
 * below it, and the main thread writing 1 byte to /dev/null under alarm(5): the write must not wait. The
 * mount is made in a mount namespace of the test's own (review 15, finding 12: in the shared /tmp every other
 * process's stat of it would block, and a killed test left it behind). Needs root and /dev/fuse (skip
 * otherwise). argv[1]: managed dir (unused: the mount is outside it). */
#include "shim_test.h"
#include "wait_in_syscall.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <time.h>

static char victim[4096];
static char mnt[] = "/tmp/dk-stuck-fs.XXXXXX";

static void on_alrm(int sig) {
    (void)sig;
    static const char m[] = "FAIL: write(/dev/null) waited 5 s for another thread's window (its create's parent open on a "
                            "stuck file system)\n";
    syscall(SYS_write, 2, m, sizeof m - 1);
    umount2(mnt, MNT_DETACH);
    rmdir(mnt);
    _exit(1);
}

static pid_t creator_tid;

static void *creator(void *unused) {
    (void)unused;
    __atomic_store_n(&creator_tid, gettid(), __ATOMIC_RELEASE);
    open(victim, O_WRONLY | O_CREAT, 0644); /* blocks in the kernel until the FUSE connection is aborted */
    return NULL;
}

int main(int argc, char **argv) {
    (void)st_dir(argc, argv);
    st_require_library();
    if (unshare(CLONE_NEWNS) != 0) SKIP("unshare(CLONE_NEWNS): %s", strerror(errno));
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) SKIP("mount --make-rprivate /: %s", strerror(errno));
    if (!mkdtemp(mnt)) FAIL("mkdtemp: %s", strerror(errno));
    int fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fuse < 0) {
        rmdir(mnt);
        SKIP("/dev/fuse: %s", strerror(errno));
    }
    char opts[128];
    snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0", fuse);
    if (mount("dkstuck", mnt, "fuse", MS_NOSUID | MS_NODEV, opts) != 0) {
        rmdir(mnt);
        SKIP("mount fuse: %s", strerror(errno));
    }
    snprintf(victim, sizeof victim, "%s/sub/x", mnt);
    int dn = OK(open("/dev/null", O_WRONLY));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, creator, NULL) == 0, "pthread_create");
    while (!__atomic_load_n(&creator_tid, __ATOMIC_ACQUIRE)) usleep(1000);
    CHECK(wait_in_syscall(creator_tid, -1, 20000), "the creator was not blocked in its call within 20 s");
    signal(SIGALRM, on_alrm);
    alarm(5);
    CHECK(write(dn, "x", 1) == 1, "write /dev/null: %s", strerror(errno));
    alarm(0);
    printf("ok: the write did not wait for the create stuck below a FUSE mount\n");
    fflush(stdout);
    umount2(mnt, MNT_DETACH); /* the connection goes with this process's /dev/fuse descriptor: the creator's
                               * lookup fails then */
    rmdir(mnt);
    _exit(0);
}
