/* daxkit: the command-line front end. One subcommand per file; this file only dispatches. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

static void usage(FILE *out) {
    fprintf(out,
            "daxkit %s -- memory-speed storage for unmodified programs\n\n"
            "usage: daxkit COMMAND [ARGS]\n\n"
            "  run [--mode posix|sync|strict] [--dir PATH]... [--append POLICY] [--persist auto|flush] [--] CMD [ARGS]\n"
            "                 run CMD with file IO under PATH served from user space\n"
            "  doctor PATH [--json]   what the medium under PATH is and what each mode can promise there\n"
            "  stats [PID] [--json]   live counters of processes running under daxkit\n"
            "  config [--doc]         option reference (DAXKIT_* variables) or the values in effect\n"
            "  recover DIR...         finish what crashed daxkit processes left in managed directories\n"
            "  graph ...              graph kernels on the microsecond-latency access engine (daxkit graph --help)\n"
            "  version                print the version\n",
            DAXKIT_VERSION);
}

/* `daxkit graph ...` runs the C++ engine, daxkit-graph, installed next to this program. */
static int cmd_graph(int argc, char **argv) {
    char self[PATH_MAX], path[PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "daxkit graph: cannot find my own location (%s)\n", strerror(errno));
        return 1;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(path, sizeof path, "%s/daxkit-graph", self);
    argv[0] = path;
    (void)argc;
    execv(path, argv);
    fprintf(stderr, "daxkit graph: cannot run %s (%s); build it with `make`\n", path, strerror(errno));
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "run")) return dk_cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "doctor")) return dk_cmd_doctor(argc - 1, argv + 1);
    if (!strcmp(cmd, "stats")) return dk_cmd_stats(argc - 1, argv + 1);
    if (!strcmp(cmd, "config")) return dk_cmd_config(argc - 1, argv + 1);
    if (!strcmp(cmd, "recover")) return dk_cmd_recover(argc - 1, argv + 1);
    if (!strcmp(cmd, "graph")) return cmd_graph(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("daxkit %s\n", DAXKIT_VERSION);
        return 0;
    }
    fprintf(stderr, "daxkit: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
