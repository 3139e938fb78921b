/* daxkit stats: reads the per-process counter files of running daxkit processes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/stats.h"
#include "commands.h"
#include "json.h"

static const struct dk_stats_file *map_stats(int pid) {
    char path[256];
    snprintf(path, sizeof path, "%s/stats.%d", dk_stats_dir(), pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    /* A file shorter than ours (a process starting, or one of a library with fewer counters: its slots are
     * laid out differently) is not read: the mapping past its end would be a SIGBUS. */
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(struct dk_stats_file)) {
        close(fd);
        return NULL;
    }
    void *p = mmap(NULL, sizeof(struct dk_stats_file), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return NULL;
    const struct dk_stats_file *f = p;
    if (f->magic != DK_STATS_MAGIC || f->counters != DK_C_COUNT) {
        munmap(p, sizeof *f);
        return NULL;
    }
    return f;
}

static bool alive(int pid) { return kill(pid, 0) == 0 || errno == EPERM; }

static void print_json(const struct dk_stats_file *f, FILE *out) {
    uint64_t v[DK_C_COUNT];
    dk_stats_sum(f, v);
    fprintf(out, "{\"pid\": %d, \"mode\": ", f->pid);
    dk_json_str(out, f->mode);
    fprintf(out, ", \"dirs\": ");
    dk_json_str(out, f->dirs);
    fprintf(out, ", \"note\": ");
    dk_json_str(out, f->note);
    for (int i = 0; i < DK_C_COUNT; i++) fprintf(out, ", \"%s\": %llu", dk_stats_name(i), (unsigned long long)v[i]);
    fprintf(out, "}\n");
}

static void print_line(const struct dk_stats_file *f) {
    uint64_t v[DK_C_COUNT];
    dk_stats_sum(f, v);
    printf("\r\033[Kpid %d %s: reads %llu (%.1f MiB) writes %llu appends %llu (%.1f MiB) fsync %llu/%llu kernel "
           "relink %llu clone %llu copy, passthrough %llu, fallbacks %llu%s%s",
           f->pid, f->mode, (unsigned long long)v[DK_C_reads], v[DK_C_read_bytes] / 1048576.0,
           (unsigned long long)v[DK_C_writes], (unsigned long long)v[DK_C_appends], v[DK_C_append_bytes] / 1048576.0,
           (unsigned long long)v[DK_C_fsyncs], (unsigned long long)v[DK_C_fsyncs_kernel],
           (unsigned long long)v[DK_C_relink_clones], (unsigned long long)v[DK_C_relink_copies],
           (unsigned long long)v[DK_C_passthrough], (unsigned long long)v[DK_C_fallbacks], f->note[0] ? " -- " : "",
           f->note);
    if (v[DK_C_o_append_sync_logs]) /* the hint at README's AOF setting (upath/publish.c: note_sync_streak) */
        printf(" -- %llu O_APPEND log(s) fsynced per record: README's AOF setting (`daxkit doctor DIR`)",
               (unsigned long long)v[DK_C_o_append_sync_logs]);
    fflush(stdout);
}

/* Lists live processes; removes the files of processes that are gone (dk_stats_sweep). */
static int list_all(bool json) {
    dk_stats_sweep(); /* files of processes that are gone (their lock is free) */
    DIR *d = opendir(dk_stats_dir());
    int count = 0;
    if (json) printf("[");
    for (struct dirent *e; d && (e = readdir(d));) {
        int pid;
        if (sscanf(e->d_name, "stats.%d", &pid) != 1) continue;
        if (!alive(pid)) continue; /* swept above, or kept by its lock: another pid namespace's */
        const struct dk_stats_file *f = map_stats(pid);
        if (!f) continue;
        if (json) {
            if (count) printf(",");
            print_json(f, stdout);
        } else {
            print_line(f);
            printf("\n");
        }
        count++;
        munmap((void *)f, sizeof *f);
    }
    if (d) closedir(d);
    if (json) printf("]\n");
    else if (!count) printf("no process is running under daxkit\n");
    return 0;
}

/* A whole decimal pid ("12abc" is not 12). */
static bool parse_pid(const char *s, int *pid) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v <= 0 || v > 0x7fffffff) return false;
    *pid = (int)v;
    return true;
}

int dk_cmd_stats(int argc, char **argv) {
    const char *dir_env = getenv("DAXKIT_STATS_DIR");
    if (dir_env && *dir_env && strcmp(dir_env, dk_stats_dir()) != 0)
        fprintf(stderr, "daxkit stats: DAXKIT_STATS_DIR=%s ignored (it takes an absolute path of at most %d bytes); "
                        "reading %s\n", dir_env, DK_PATH_OPT_MAX, dk_stats_dir());
    bool json = !isatty(STDOUT_FILENO), once = false;
    int pid = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--once")) once = true;
        else if (parse_pid(argv[i], &pid)) continue;
        else {
            fprintf(stderr, "usage: daxkit stats [PID] [--once] [--json]\n");
            return 2;
        }
    }
    if (!pid) return list_all(json);
    const struct dk_stats_file *f = map_stats(pid);
    if (!f) {
        fprintf(stderr, "daxkit stats: no counters for pid %d (is it running under daxkit with DAXKIT_STATS=1, and "
                        "has it opened a managed file? the file is made at the first one)\n", pid);
        return 1;
    }
    if (json) {
        print_json(f, stdout);
        return 0;
    }
    for (;;) {
        print_line(f);
        if (once || !alive(pid)) break;
        sleep(1);
    }
    printf("\n");
    return 0;
}
