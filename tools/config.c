/* daxkit config: the option table as documentation, or the values the environment sets. */
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "commands.h"

static int bad;
static void report(const char *msg) {
    bad++;
    fprintf(stderr, "daxkit config: %s\n", msg);
}

int dk_cmd_config(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--doc")) {
        dk_config_write_doc(stdout);
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "usage: daxkit config [--doc]\n");
        return 2;
    }
    struct dk_config cfg;
    dk_config_load(&cfg, NULL, report);
    char buf[4096];
    int n = dk_config_write_nondefault(&cfg, buf, sizeof buf, "\n");
    printf("%s\n", n ? buf : "(all options at their defaults; `daxkit config --doc` lists them)");
    return bad ? 1 : 0;
}
