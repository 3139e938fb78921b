/* daxkit doctor PATH [--json] [--quick]
 *
 * Probes the file system under PATH (persist/media.h) and says, for a human or as JSON: which medium it is
 * and why, what works there (MAP_SYNC, 2 MiB mappings, block sharing), what relink's building blocks cost,
 * the relink threshold that follows, the CPU's flush and non-temporal store choice, and what each mode can
 * promise about a process crash and a power loss on that medium. A tool process, so plain libc calls are
 * fine here (the preload library is not loaded into it). */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/config.h"
#include "common/dk.h"
#include "persist/media.h"
#include "persist/persist.h"
#include "commands.h"
#include "json.h"

enum { DOCTOR_OK = 0, DOCTOR_FAILED = 1, DOCTOR_USAGE = 2 };

struct doctor_args {
    const char *path;
    bool json;
    bool quick; /* skip cost measurement */
};

/* Where the directory is mounted, from /proc/self/mountinfo. Empty strings when not found. */
struct mount_desc {
    char source[256];
    char point[512];
    char fstype[32];
    char options[256];    /* per-mount options */
    char fs_options[512]; /* the super block's ("dax=always", "huge=always", "size=" show here) */
};

struct doctor {
    struct doctor_args args;
    char dir[4096]; /* the directory probed: PATH, or the directory holding PATH */
    struct mount_desc mnt;
    struct dk_medium_info m;
    struct dk_config cfg;
    uint64_t clone_min_bytes; /* UINT64_MAX: never clone */
    const char *clone_min_source;
};

static void usage(FILE *out) {
    fprintf(out,
            "usage: daxkit doctor PATH [--json] [--quick]\n"
            "  Probes the file system holding PATH (a directory, or a file in one) and reports the medium\n"
            "  (dax / pagecache / volatile), whether MAP_SYNC, 2 MiB mappings and block sharing work there,\n"
            "  measured relink costs, the CPU's flush instruction, and what each mode can promise.\n"
            "  --json   machine-readable output\n"
            "  --quick  skip the cost measurement (a few milliseconds to a second)\n"
            "  Creates and removes scratch files in the directory: it must be writable.\n");
}

static int parse_args(int argc, char **argv, struct doctor_args *a) {
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--json")) a->json = true;
        else if (!strcmp(s, "--quick")) a->quick = true;
        else if (!strcmp(s, "-h") || !strcmp(s, "--help")) return -1;
        else if (s[0] == '-' && s[1] != '\0') {
            fprintf(stderr, "daxkit doctor: unknown option '%s'\n", s);
            return DOCTOR_USAGE;
        } else if (a->path) {
            fprintf(stderr, "daxkit doctor: one PATH only ('%s' and '%s' given)\n", a->path, s);
            return DOCTOR_USAGE;
        } else a->path = s;
    }
    if (!a->path) {
        fprintf(stderr, "daxkit doctor: PATH missing\n");
        return DOCTOR_USAGE;
    }
    return 0;
}

/* ---- the mount, from /proc/self/mountinfo ---- */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s) {
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 3;
        } else *w++ = *r;
    }
    *w = '\0';
}

/* "id parent maj:min root point opts [optional...] - fstype source superopts" */
static bool mountinfo_line(char *line, dev_t dev, struct mount_desc *out) {
    char *save = NULL, *f[6];
    for (int i = 0; i < 6; i++)
        if (!(f[i] = strtok_r(i ? NULL : line, " \n", &save))) return false;
    unsigned maj, min;
    if (sscanf(f[2], "%u:%u", &maj, &min) != 2 || maj != major(dev) || min != minor(dev)) return false;
    char *tok;
    while ((tok = strtok_r(NULL, " \n", &save)) && strcmp(tok, "-") != 0) {}
    char *type = strtok_r(NULL, " \n", &save), *src = strtok_r(NULL, " \n", &save);
    char *super = strtok_r(NULL, " \n", &save);
    if (!type || !src) return false;
    unescape_octal(f[4]);
    unescape_octal(src);
    snprintf(out->point, sizeof out->point, "%s", f[4]);
    snprintf(out->fstype, sizeof out->fstype, "%s", type);
    snprintf(out->source, sizeof out->source, "%s", src);
    snprintf(out->options, sizeof out->options, "%s", f[5]);
    snprintf(out->fs_options, sizeof out->fs_options, "%s", super ? super : "");
    return true;
}

/* Whether mount point m covers path p (p equal to m, or below it at a component boundary). */
static size_t covers(const char *m, const char *p) {
    size_t n = strlen(m);
    if (n == 1 && m[0] == '/') return 1;
    return strncmp(m, p, n) == 0 && (p[n] == '/' || p[n] == 0) ? n : 0;
}

/* The mount of dir: among the lines of its device, the one whose mount point is the longest prefix of its
 * real path (a device mounted twice, e.g. a bind mount of a subdirectory elsewhere, has one line per mount;
 * review 13, finding 7), the later line when two are equal (the later one is on top). Lines of any length
 * (getline: overlayfs lines pass 2 KiB). */
static void find_mount(const char *dir, struct mount_desc *out) {
    memset(out, 0, sizeof *out);
    struct stat st;
    char real[PATH_MAX];
    if (stat(dir, &st) != 0 || !realpath(dir, real)) return;
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f) return;
    char *line = NULL;
    size_t cap = 0, best = 0;
    struct mount_desc d;
    while (getline(&line, &cap, f) > 0) {
        if (!mountinfo_line(line, st.st_dev, &d)) continue;
        size_t n = covers(d.point, real);
        if (n && n >= best) best = n, *out = d;
        else if (!best && !out->point[0]) *out = d; /* none covers the path (a moved mount): still this device */
    }
    free(line);
    fclose(f);
}

/* ---- probing ---- */

static void config_warning(const char *msg) { fprintf(stderr, "daxkit doctor: warning: %s\n", msg); }

/* PATH may be a directory or anything inside one. Returns an open directory fd, or -1 after a message. */
static int open_dir(struct doctor *d) {
    const char *path = d->args.path;
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr,
                "daxkit doctor: %s: %s\n  give an existing directory on the file system to check "
                "(create it with `mkdir -p %s`, or mount the medium there first)\n",
                path, strerror(errno), path);
        return -1;
    }
    char copy[sizeof d->dir];
    snprintf(copy, sizeof copy, "%s", path);
    snprintf(d->dir, sizeof d->dir, "%s", S_ISDIR(st.st_mode) ? path : dirname(copy));
    int fd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        fprintf(stderr, "daxkit doctor: %s: %s\n  give a directory you can open (check its permissions)\n",
                d->dir, strerror(errno));
    return fd;
}

static int probe(struct doctor *d) {
    int dirfd = open_dir(d);
    if (dirfd < 0) return DOCTOR_USAGE;
    find_mount(d->dir, &d->mnt);
    int flags = DK_PROBE_HUGE | (d->args.quick ? 0 : DK_PROBE_COSTS);
    int r = dk_medium_probe(dirfd, flags, &d->m);
    close(dirfd);
    if (r == -EACCES || r == -EPERM || r == -EROFS) {
        fprintf(stderr,
                "daxkit doctor: %s: cannot create a scratch file there: %s\n  the probe needs a writable "
                "directory: run as a user who may write it, or name a writable directory on the same file "
                "system\n",
                d->dir, strerror(-r));
        return DOCTOR_USAGE;
    }
    if (r != 0) {
        fprintf(stderr, "daxkit doctor: %s: probing the medium failed: %s\n", d->dir, strerror(-r));
        return DOCTOR_FAILED;
    }
    d->clone_min_bytes = dk_medium_clone_min_bytes(&d->m);
    d->clone_min_source = !d->m.reflink          ? "no block sharing on this file system"
                          : d->m.clone_zero_lost ? "block sharing is unsafe here: the kernel loses zeroing of part "
                                                   "of a shared block (Linux 6.1 fsdax)"
                          : d->m.costs_measured ? "from the measured costs"
                                                : "default: costs not measured";
    if (d->cfg.clone_min_bytes != 0 && d->m.reflink) {
        d->clone_min_bytes = d->cfg.clone_min_bytes;
        d->clone_min_source = d->m.clone_zero_lost ? "DAXKIT_CLONE_MIN_BYTES, although the kernel loses zeroing of "
                                                     "part of a shared block here"
                                                   : "DAXKIT_CLONE_MIN_BYTES";
    }
    return DOCTOR_OK;
}

/* ---- what each mode promises ---- */

struct promise {
    const char *durable_when;
    const char *process_crash;
    const char *power_loss;
};

static bool emulated(const struct doctor *d) { return d->cfg.persist == DK_PERSIST_FLUSH; }

static struct promise mode_promise(const struct doctor *d, enum dk_mode mode) {
    struct promise p;
    bool volatile_medium = d->m.medium == DK_MEDIUM_VOLATILE;
    /* With DAXKIT_PERSIST=flush on a page-cache medium, "durable" per operation means only that the CPU
     * caches were written back -- to the page cache, which the device sees at the kernel's leisure. */
    bool fake_sync = emulated(d) && d->m.medium == DK_MEDIUM_PAGECACHE;
    static const char nothing[] = "nothing: the medium is memory; daxkit cannot make data survive power loss here";
    static const char fake[] = "NOT guaranteed: DAXKIT_PERSIST=flush (emulation) writes CPU caches back to the "
                               "page cache only; the device gets the data at the kernel's write-back or fsync";
    static const char never[] = "never: the medium is volatile";
    switch (mode) {
    case DK_MODE_POSIX:
        p.durable_when = volatile_medium ? never : "fsync/fdatasync";
        p.process_crash = "overwrites: every completed write (they reach the file at once); appends and size "
                          "changes: up to the last publish point (fsync, fdatasync, close, lock release, "
                          "fork/exec), later ones are lost and the file keeps its last published size; a write "
                          "cut by the crash may be partly applied";
        p.power_loss = volatile_medium ? nothing
                                       : "data and sizes as of the last fsync/fdatasync (appends atomically); "
                                         "later writes may or may not survive, as with POSIX";
        break;
    case DK_MODE_SYNC:
        p.durable_when = volatile_medium ? never : fake_sync ? "never by itself (emulation): at fsync" : "the call returns";
        p.process_crash = "every completed data operation, appends and sizes included; a write cut by the "
                          "crash may be partly applied";
        p.power_loss = volatile_medium ? nothing
                       : fake_sync     ? fake
                                       : "every completed data operation (durable when the call returns); a write "
                                         "cut by the power loss may be partly applied";
        break;
    default:
        p.durable_when = volatile_medium ? never
                         : fake_sync     ? "never by itself (emulation): at fsync"
                                         : "the call returns, atomically";
        p.process_crash = "every completed operation; an interrupted one is all or nothing";
        p.power_loss = volatile_medium ? nothing
                       : fake_sync     ? fake
                                       : "every completed operation, each one all or nothing";
        break;
    }
    return p;
}

static const char *medium_meaning(enum dk_medium m) {
    switch (m) {
    case DK_MEDIUM_DAX: return "MAP_SYNC accepted: a cache-line flush + fence makes stores durable, no system call";
    case DK_MEDIUM_PAGECACHE: return "data goes through the page cache: msync/fdatasync is what makes it durable";
    case DK_MEDIUM_VOLATILE: return "memory file system: data survives a process crash, never a power loss";
    }
    return "?";
}

static const char *persist_label(const struct doctor *d) {
    if (!emulated(d)) return "auto (follows the medium)";
    if (d->m.medium == DK_MEDIUM_DAX) return "flush (DAXKIT_PERSIST=flush; the medium is DAX, so this is real)";
    return "flush -- EMULATION (DAXKIT_PERSIST=flush): mappings treated as DAX for benchmarking; not durable";
}

/* ---- text ---- */

static void fmt_ns(char *buf, size_t len, uint64_t ns) {
    if (ns == 0) snprintf(buf, len, "n/a");
    else if (ns < 1000) snprintf(buf, len, "%" PRIu64 " ns", ns);
    else if (ns < 1000000) snprintf(buf, len, "%.1f us", (double)ns / 1e3);
    else snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
}

static void fmt_bytes(char *buf, size_t len, uint64_t b) {
    if (b >= (1u << 20) && b % (1u << 20) == 0) snprintf(buf, len, "%" PRIu64 " MiB", b >> 20);
    else if (b >= 1024 && b % 1024 == 0) snprintf(buf, len, "%" PRIu64 " KiB", b >> 10);
    else snprintf(buf, len, "%" PRIu64 " B", b);
}

static void text_costs(const struct doctor *d) {
    const struct dk_medium_info *m = &d->m;
    if (d->args.quick) {
        printf("costs           not measured (--quick)\n");
    } else if (!m->costs_measured) {
        printf("costs           not measured: %s\n", strerror(m->costs_error));
    } else {
        char a[32], b[32];
        printf("costs           medians of %u runs (%.0f ms in all)\n", m->cost_samples,
               (double)m->costs_total_ns / 1e6);
        fmt_ns(a, sizeof a, m->clone_4k_ns), fmt_ns(b, sizeof b, m->clone_2m_ns);
        printf("  clone         4 KiB %-10s 2 MiB %s%s\n", a, b, m->reflink ? "   (FICLONERANGE)" : "");
        fmt_ns(a, sizeof a, m->copy_4k_ns), fmt_ns(b, sizeof b, m->copy_2m_ns);
        printf("  copy          4 KiB %-10s 2 MiB %s   (copy_file_range)\n", a, b);
        fmt_ns(a, sizeof a, m->fsync_ns);
        printf("  fsync         %s after a 4 KiB append\n", a);
    }
    char t[32];
    if (d->clone_min_bytes == UINT64_MAX) {
        printf("relink          copy always (%s)\n", d->clone_min_source);
    } else {
        fmt_bytes(t, sizeof t, d->clone_min_bytes);
        printf("relink          clone ranges of >= %s, copy smaller ones (%s)\n", t, d->clone_min_source);
    }
}

/* Prints `label` padded to `indent` columns, then `text` wrapped at TEXT_WIDTH with the same indent. */
#define TEXT_WIDTH 100
static void print_wrapped(int indent, const char *label, const char *text) {
    int col = printf("%*s%-*s", 2, "", indent - 2, label);
    while (*text) {
        size_t word = strcspn(text, " ");
        if (col > indent && col + 1 + (int)word > TEXT_WIDTH) col = printf("\n%*s", indent, "") - 1;
        else if (col > indent) col += printf(" ");
        col += printf("%.*s", (int)word, text);
        text += word;
        text += strspn(text, " ");
    }
    printf("\n");
}

static void text_report(const struct doctor *d) {
    const struct dk_medium_info *m = &d->m;
    printf("daxkit doctor: %s\n", d->dir);
    if (d->mnt.point[0])
        printf("file system     %s on %s, mounted at %s (%s; %s)\n", d->mnt.fstype, d->mnt.source, d->mnt.point,
               d->mnt.options, d->mnt.fs_options);
    printf("                %s, magic 0x%" PRIx64 ", block %u B\n", m->fs_name, m->fs_magic, m->block_bytes);
    printf("medium          %s: %s\n", dk_medium_name(m->medium), medium_meaning(m->medium));
    printf("MAP_SYNC        %s\n", m->map_sync ? "yes" : "no (MAP_SHARED_VALIDATE|MAP_SYNC refused: not a DAX mount)");
    printf("2 MiB mappings  %s (%s)\n", m->huge_pages ? "yes" : "no", m->huge_pages_why ? m->huge_pages_why : "not probed");
    printf("block sharing   %s\n", !m->reflink         ? "no (FICLONERANGE refused: relink copies)"
                                    : m->clone_zero_lost ? "yes, but zeroing part of a shared block is lost here "
                                                           "(kernel fsdax bug): relink copies unless "
                                                           "DAXKIT_CLONE_MIN_BYTES is set"
                                                         : "yes (FICLONERANGE works: relink can move whole blocks)");
    text_costs(d);
    if (!strcmp(dk_build_kind(), "test"))
        printf("build           test: honours the test-only DAXKIT_TEST_* variables (crash points, fault injection);\n"
               "                `make release` builds a library without them\n");
    else
        printf("build           release\n");
    printf("flush           %s\n", dk_flush_name());
    printf("non-temporal    %s stores for writes >= %" PRIu64 " B\n", dk_nt_name(), d->cfg.nt_min_bytes);
    printf("crc32c fold     %s (strict mode's staged bytes: avx512 > pclmul > off)\n", dk_crc_fold_name());
    printf("persistence     %s\n", persist_label(d));
    if (m->medium == DK_MEDIUM_PAGECACHE && m->costs_measured) {
        char t[32];
        fmt_ns(t, sizeof t, m->fsync_ns);
        printf("                sync and strict modes pay about one fsync (%s) per data operation here\n", t);
    }
    printf("\nwhat each mode can promise on this medium%s:\n",
           emulated(d) && m->medium != DK_MEDIUM_DAX ? " (with the EMULATION above)" : "");
    static const enum dk_mode modes[] = {DK_MODE_POSIX, DK_MODE_SYNC, DK_MODE_STRICT};
    for (size_t i = 0; i < DK_ARRAY_LEN(modes); i++) {
        struct promise p = mode_promise(d, modes[i]);
        char label[48];
        snprintf(label, sizeof label, "%-8sdurable when", dk_config_enum_name("MODE", (int)modes[i]));
        print_wrapped(24, label, p.durable_when);
        print_wrapped(24, "        process crash", p.process_crash);
        print_wrapped(24, "        power loss", p.power_loss);
    }
    /* Logs synced per record: what the append policy can do with them here (session 25: the setting for an AOF
     * was found only in README). */
    printf("\nlogs synced per record (a WAL, an AOF):\n");
    print_wrapped(24, "append policy",
                  m->medium == DK_MEDIUM_PAGECACHE
                      ? "fsync reaches the kernel for every record here whatever the strategy: the default (stage) "
                        "fits them"
                      : "the default (stage) pays each fsync a pwrite of the record (through O_APPEND also an "
                        "fstat); DAXKIT_APPEND=auto moves a log not opened O_APPEND to extend with keep by itself "
                        "(records stored in place, fsyncs without a system call); for an O_APPEND log no other "
                        "program appends to (redis's AOF): DAXKIT_APPEND='stage,*.aof=extend' "
                        "DAXKIT_EXTEND_SYNC=keep (README). `daxkit stats` counts O_APPEND logs synced per record "
                        "(o_append_sync_logs)");
}

/* ---- JSON ---- */

static void json_kv_str(const char *k, const char *v, const char *after) {
    printf("\"%s\": ", k);
    dk_json_str(stdout, v);
    fputs(after, stdout);
}

static void json_ns(const char *k, uint64_t ns, const char *after) {
    if (ns == 0) printf("\"%s\": null%s", k, after);
    else printf("\"%s\": %" PRIu64 "%s", k, ns, after);
}

static void json_costs(const struct doctor *d) {
    const struct dk_medium_info *m = &d->m;
    printf("  \"costs\": {\"measured\": %s, ", m->costs_measured ? "true" : "false");
    if (!m->costs_measured)
        json_kv_str("error", d->args.quick ? "not measured (--quick)" : strerror(m->costs_error), ", ");
    printf("\"samples\": %u, ", m->costs_measured ? m->cost_samples : 0);
    json_ns("clone_4k_ns", m->clone_4k_ns, ", ");
    json_ns("clone_2m_ns", m->clone_2m_ns, ", ");
    json_ns("copy_4k_ns", m->copy_4k_ns, ", ");
    json_ns("copy_2m_ns", m->copy_2m_ns, ", ");
    json_ns("fsync_ns", m->fsync_ns, "},\n");
    printf("  \"relink\": {\"clone_min_bytes\": ");
    if (d->clone_min_bytes == UINT64_MAX) printf("null, ");
    else printf("%" PRIu64 ", ", d->clone_min_bytes);
    json_kv_str("strategy", d->clone_min_bytes == UINT64_MAX ? "copy" : "clone+copy", ", ");
    json_kv_str("reason", d->clone_min_source, "},\n");
}

static void json_report(const struct doctor *d) {
    const struct dk_medium_info *m = &d->m;
    printf("{\n  ");
    json_kv_str("path", d->dir, ",\n  ");
    json_kv_str("medium", dk_medium_name(m->medium), ",\n  ");
    json_kv_str("medium_meaning", medium_meaning(m->medium), ",\n  ");
    json_kv_str("build", dk_build_kind(), ",\n");
    printf("  \"fs\": {");
    json_kv_str("name", m->fs_name, ", ");
    printf("\"magic\": \"0x%" PRIx64 "\", \"block_bytes\": %u, ", m->fs_magic, m->block_bytes);
    json_kv_str("type", d->mnt.fstype, ", ");
    json_kv_str("source", d->mnt.source, ", ");
    json_kv_str("mount_point", d->mnt.point, ", ");
    json_kv_str("mount_options", d->mnt.options, ", ");
    json_kv_str("fs_options", d->mnt.fs_options, "},\n");
    printf("  \"map_sync\": %s,\n  \"huge_pages\": %s,\n  \"huge_pmd_kb\": %" PRIu64 ",\n  ",
           m->map_sync ? "true" : "false", m->huge_pages ? "true" : "false", m->huge_pmd_kb);
    json_kv_str("huge_pages_why", m->huge_pages_why, ",\n");
    printf("  \"reflink\": %s,\n  \"clone_zero_lost\": %s,\n", m->reflink ? "true" : "false",
           m->clone_zero_lost ? "true" : "false");
    json_costs(d);
    printf("  \"cpu\": {");
    json_kv_str("flush", dk_flush_name(), ", ");
    json_kv_str("nt", dk_nt_name(), ", ");
    json_kv_str("crc_fold", dk_crc_fold_name(), ", ");
    printf("\"nt_min_bytes\": %" PRIu64 "},\n", d->cfg.nt_min_bytes);
    printf("  \"persist\": {");
    json_kv_str("setting", dk_config_enum_name("PERSIST", d->cfg.persist), ", ");
    printf("\"emulation\": %s, ", emulated(d) && m->medium != DK_MEDIUM_DAX ? "true" : "false");
    json_kv_str("label", persist_label(d), "},\n");
    printf("  \"modes\": {\n");
    static const enum dk_mode modes[] = {DK_MODE_POSIX, DK_MODE_SYNC, DK_MODE_STRICT};
    for (size_t i = 0; i < DK_ARRAY_LEN(modes); i++) {
        struct promise p = mode_promise(d, modes[i]);
        printf("    \"%s\": {", dk_config_enum_name("MODE", (int)modes[i]));
        json_kv_str("durable_when", p.durable_when, ", ");
        json_kv_str("process_crash", p.process_crash, ", ");
        json_kv_str("power_loss", p.power_loss, i + 1 < DK_ARRAY_LEN(modes) ? "},\n" : "}\n");
    }
    printf("  }\n}\n");
}

int dk_cmd_doctor(int argc, char **argv) {
    struct doctor *d = calloc(1, sizeof *d);
    if (!d) {
        fprintf(stderr, "daxkit doctor: out of memory\n");
        return DOCTOR_FAILED;
    }
    int r = parse_args(argc, argv, &d->args);
    if (r != 0) {
        usage(r < 0 ? stdout : stderr);
        free(d);
        return r < 0 ? DOCTOR_OK : r;
    }
    dk_config_load(&d->cfg, NULL, config_warning);
    dk_persist_init(d->cfg.flush);
    r = probe(d);
    if (r == DOCTOR_OK) {
        if (d->args.json) json_report(d);
        else text_report(d);
        if (fflush(stdout) != 0) r = DOCTOR_FAILED;
    }
    free(d);
    return r;
}
