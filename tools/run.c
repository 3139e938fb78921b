/* daxkit run: adds libdaxkit.so to LD_PRELOAD (once), sets DAXKIT_* from the flags, checks the
 * configuration, and execs the command. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "commands.h"
#include "upath/policy.h"

static void run_usage(void) {
    fprintf(stderr, "usage: daxkit run [--mode posix|sync|strict] [--dir PATH]... [--append stage|extend|auto[,GLOB=...]]\n"
                    "                  [--atomic GLOB[:GLOB...]] [--atomic-commit auto|write|fsync]\n"
                    "                  [--atomic-mmap GLOB[:GLOB...]]\n"
                    "                  [--persist auto|flush] [--verbose] [--] COMMAND [ARGS]\n");
}

/* The library next to this program: <prefix>/bin/daxkit -> <prefix>/lib/libdaxkit.so. */
static int find_library(char *out, size_t len) {
    const char *env = getenv("DAXKIT_LIB");
    if (env && *env) { /* made absolute, symbolic links kept: a program that changes directory keeps it */
        char cwd[PATH_MAX];
        int n = env[0] == '/' ? snprintf(out, len, "%s", env)
                : getcwd(cwd, sizeof cwd) ? snprintf(out, len, "%s/%s", cwd, env) : -1;
        if (n < 0 || (size_t)n >= len) return -1;
        return access(out, R_OK);
    }
    char self[PATH_MAX - 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return -1;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return -1;
    *slash = 0;
    snprintf(out, len, "%s/../lib/libdaxkit.so", self);
    char real[PATH_MAX];
    if (!realpath(out, real)) return -1;
    snprintf(out, len, "%s", real);
    return 0;
}

/* LD_PRELOAD with lib added unless an entry already names it. */
static char *preload_with(const char *lib) {
    const char *cur = getenv("LD_PRELOAD");
    if (!cur || !*cur) return strdup(lib);
    char *copy = strdup(cur), *save = NULL;
    for (char *t = strtok_r(copy, ": ", &save); t; t = strtok_r(NULL, ": ", &save)) {
        char real[PATH_MAX];
        if (!strcmp(t, lib) || (realpath(t, real) && !strcmp(real, lib))) {
            free(copy);
            return strdup(cur);
        }
    }
    free(copy);
    size_t n = strlen(lib) + strlen(cur) + 2;
    char *out = malloc(n);
    snprintf(out, n, "%s:%s", lib, cur);
    return out;
}

static int config_bad;
static void report(const char *msg) {
    config_bad++;
    fprintf(stderr, "daxkit run: %s\n", msg);
}

int dk_cmd_run(int argc, char **argv) {
    char dirs[8192] = "";
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-') break;
        if (!strcmp(a, "--verbose")) {
            setenv("DAXKIT_VERBOSE", "1", 1);
            continue;
        }
        if (!v) {
            fprintf(stderr, "daxkit run: %s needs a value\n", a);
            run_usage();
            return 2;
        }
        i++;
        if (!strcmp(a, "--mode")) setenv("DAXKIT_MODE", v, 1);
        else if (!strcmp(a, "--append")) setenv("DAXKIT_APPEND", v, 1);
        else if (!strcmp(a, "--atomic")) setenv("DAXKIT_ATOMIC", v, 1);
        else if (!strcmp(a, "--atomic-commit")) setenv("DAXKIT_ATOMIC_COMMIT", v, 1);
        else if (!strcmp(a, "--atomic-mmap")) setenv("DAXKIT_ATOMIC_MMAP", v, 1);
        else if (!strcmp(a, "--persist")) setenv("DAXKIT_PERSIST", v, 1);
        else if (!strcmp(a, "--dir")) {
            char real[PATH_MAX];
            if (!realpath(v, real)) {
                fprintf(stderr, "daxkit run: --dir %s: %s; create the directory (or mount the medium) first\n", v,
                        strerror(errno));
                return 2;
            }
            if (strchr(real, ':')) {
                fprintf(stderr, "daxkit run: --dir %s: a managed path cannot contain ':'\n", real);
                return 2;
            }
            size_t used = strlen(dirs);
            snprintf(dirs + used, sizeof dirs - used, "%s%s", used ? ":" : "", real);
        } else {
            fprintf(stderr, "daxkit run: unknown option %s\n", a);
            run_usage();
            return 2;
        }
    }
    if (i >= argc) {
        run_usage();
        return 2;
    }
    if (dirs[0]) setenv("DAXKIT_DIR", dirs, 1);
    const char *d = getenv("DAXKIT_DIR");
    if (!d || !*d) {
        fprintf(stderr, "daxkit run: no managed directory; pass --dir PATH (or set DAXKIT_DIR)\n");
        return 2;
    }
    struct dk_config cfg;
    dk_config_load(&cfg, NULL, report);
    char why[256];
    if (up_policy_validate(cfg.append, why, sizeof why)) report(why);
    if (config_bad) {
        if (cfg.strict_config) {
            fprintf(stderr, "daxkit run: DAXKIT_STRICT_CONFIG=1: not starting %s\n", argv[i]);
            return 2;
        }
        fprintf(stderr, "daxkit run: %s will run without acceleration\n", argv[i]);
    }
    char lib[PATH_MAX];
    if (find_library(lib, sizeof lib) != 0) {
        fprintf(stderr, "daxkit run: cannot find libdaxkit.so next to this program; build with `make` or set DAXKIT_LIB\n");
        return 1;
    }
    /* ld.so splits LD_PRELOAD at spaces and colons and runs the program without a library it cannot load:
     * a build under "~/My Projects" ran every program unaccelerated -- in strict mode without its
     * durability -- and exit 0 (review 12, finding 7). No escaping exists: refuse, and say what to do. */
    if (strpbrk(lib, " :")) {
        fprintf(stderr, "daxkit run: the library's path '%s' contains a space or ':', which LD_PRELOAD cannot "
                        "carry (the program would run without daxkit); move the build or install to a path without "
                        "them, or set DAXKIT_LIB to a symbolic link whose path has none\n", lib);
        return 2;
    }
    char *pre = preload_with(lib);
    setenv("LD_PRELOAD", pre, 1);
    free(pre);
    execvp(argv[i], argv + i);
    fprintf(stderr, "daxkit run: cannot run %s: %s\n", argv[i], strerror(errno));
    return 127;
}
