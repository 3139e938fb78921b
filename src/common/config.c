#include "common/config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/dk.h"

struct dk_config dk_cfg;
bool dk_cfg_loaded;

enum opt_type { T_BOOL, T_UINT, T_SIZE, T_ENUM, T_STR, T_PATH };

struct opt_desc {
    const char *name;   /* without the DAXKIT_ prefix */
    enum opt_type type;
    const char *def;
    uint64_t lo, hi;
    const char *values; /* ENUM: "a|b|c" */
    const char *doc;
    size_t offset;
};

static const struct opt_desc opts[] = {
#define OPT(field, NAME, TYPE, def, lo, hi, values, doc) \
    {#NAME, T_##TYPE, def, lo, hi, values, doc, offsetof(struct dk_config, field)},
#include "common/options.def"
#undef OPT
};

static const char *type_name(enum opt_type t) {
    static const char *names[] = {"bool", "uint", "size", "enum", "string", "path"};
    return names[t];
}

/* Index of `s` within "a|b|c", or -1. */
static int enum_index(const char *values, const char *s) {
    size_t n = strlen(s);
    int idx = 0;
    for (const char *p = values; *p; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncasecmp(p, s, n) == 0) return idx;
        if (!bar) break;
        p = bar + 1;
    }
    return -1;
}

const char *dk_build_kind(void) {
#ifdef DAXKIT_TEST_BUILD
    return "test";
#else
    return "release";
#endif
}

const char *dk_config_enum_name(const char *option, int value) {
    static __thread char buf[32];
    for (size_t i = 0; i < DK_ARRAY_LEN(opts); i++) {
        if (strcmp(opts[i].name, option) != 0 || opts[i].type != T_ENUM) continue;
        const char *p = opts[i].values;
        for (int idx = 0; p; idx++) {
            const char *bar = strchr(p, '|');
            size_t len = bar ? (size_t)(bar - p) : strlen(p);
            if (idx == value) {
                len = DK_MIN(len, sizeof buf - 1);
                memcpy(buf, p, len);
                buf[len] = 0;
                return buf;
            }
            p = bar ? bar + 1 : NULL;
        }
    }
    return "?";
}

/* Parses an unsigned decimal number with an optional K/M/G/T suffix (powers of 1024) when `sized`. Decimal
 * only, from its first byte: strtoull's base 0 read "010M" as octal (8 MiB) and "0x10M" as 16 MiB, and its
 * leading blanks and sign let " 64M" and "+5" pass (review 12, finding 9). */
static int parse_u64(const char *s, bool sized, uint64_t *out) {
    if (!isdigit((unsigned char)*s)) return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return -1;
    unsigned shift = 0;
    if (sized && *end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': shift = 10; break;
        case 'M': shift = 20; break;
        case 'G': shift = 30; break;
        case 'T': shift = 40; break;
        default: return -1;
        }
        end++;
        if (toupper((unsigned char)*end) == 'I') end++;
        if (toupper((unsigned char)*end) == 'B') end++;
    }
    if (*end) return -1;
    if (shift && v > (UINT64_MAX >> shift)) return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static int parse_bool(const char *s, bool *out) {
    if (!strcmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "true") || !strcasecmp(s, "on")) {
        *out = true;
        return 0;
    }
    if (!strcmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "false") || !strcasecmp(s, "off")) {
        *out = false;
        return 0;
    }
    return -1;
}

/* "DAXKIT_<name>" into key (64 bytes), without snprintf (~860 instructions each, session 15). */
static void env_key(char key[64], const char *name) {
    size_t n = strnlen(name, 64 - 8);
    memcpy(key, "DAXKIT_", 7);
    memcpy(key + 7, name, n);
    key[7 + n] = '\0';
}

bool dk_config_env_bool(const char *name, bool def) {
    char key[64];
    env_key(key, name);
    const char *v = getenv(key);
    bool b;
    return v && parse_bool(v, &b) == 0 ? b : def;
}

static void describe_accepted(const struct opt_desc *o, char *buf, size_t len) {
    switch (o->type) {
    case T_BOOL: snprintf(buf, len, "0 or 1"); break;
    case T_UINT: snprintf(buf, len, "an integer from %llu to %llu (decimal)", (unsigned long long)o->lo,
                          (unsigned long long)o->hi); break;
    case T_SIZE: snprintf(buf, len, "a size from %llu to %llu bytes (decimal; suffixes K, M, G, T)",
                          (unsigned long long)o->lo, (unsigned long long)o->hi); break;
    case T_ENUM: snprintf(buf, len, "one of %s", o->values); break;
    case T_STR: snprintf(buf, len, "a string"); break;
    case T_PATH: snprintf(buf, len, "an absolute path of at most %d bytes", DK_PATH_OPT_MAX); break;
    }
}

/* dk_config_load's message for a bad value of `o`. */
static void report_bad(const struct opt_desc *o, const char *v, void (*report)(const char *msg)) {
    char key[64], accepted[160], msg[512];
    env_key(key, o->name);
    describe_accepted(o, accepted, sizeof accepted);
    snprintf(msg, sizeof msg, "%s='%s' is not valid: expected %s", key, v, accepted);
    report(msg);
}

/* Stores `s` into the field of `o`. Returns 0 or -1 when the value is not acceptable. */
static int set_value(struct dk_config *cfg, const struct opt_desc *o, const char *s) {
    char *field = (char *)cfg + o->offset;
    uint64_t v;
    switch (o->type) {
    case T_BOOL: return parse_bool(s, (bool *)field);
    case T_UINT:
    case T_SIZE:
        if (parse_u64(s, o->type == T_SIZE, &v) || v < o->lo || v > o->hi) return -1;
        *(uint64_t *)field = v;
        return 0;
    case T_ENUM: {
        int idx = enum_index(o->values, s);
        if (idx < 0) return -1;
        *(int *)field = idx;
        return 0;
    }
    case T_PATH:
        if (s[0] != '/' || strlen(s) > DK_PATH_OPT_MAX) return -1;
        /* fall through */
    case T_STR: {
        char *copy = strdup(s);
        if (!copy) return -1;
        *(const char **)field = copy;
        return 0;
    }
    }
    return -1;
}

void dk_config_defaults(struct dk_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < DK_ARRAY_LEN(opts); i++) {
        if (opts[i].type == T_STR || opts[i].type == T_PATH) {
            *(const char **)((char *)cfg + opts[i].offset) = opts[i].def; /* static string */
            continue;
        }
        int rc = set_value(cfg, &opts[i], opts[i].def);
        dk_assert(rc == 0);
    }
}

static const struct opt_desc *find_opt(const char *name, size_t len) {
    for (size_t i = 0; i < DK_ARRAY_LEN(opts); i++)
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0) return &opts[i];
    return NULL;
}

int dk_config_env_enum(const char *name, int def, void (*report)(const char *msg)) {
    const struct opt_desc *o = find_opt(name, strlen(name));
    dk_assert(o && o->type == T_ENUM);
    char key[64];
    env_key(key, name);
    const char *v = getenv(key);
    int idx = v ? enum_index(o->values, v) : def; /* (set_value's ENUM parse) */
    if (idx >= 0) return idx;
    if (report) report_bad(o, v, report);
    return def;
}

/* Each option's value in the environment (envp, or the process's), the first one as getenv finds it, in one
 * pass: a getenv per option read the whole environment once per option (~11,700 instructions of every
 * process start, session 16). */
static void env_values(char *const *envp, const char *values[DK_ARRAY_LEN(opts)]) {
    extern char **environ;
    for (char *const *e = envp ? envp : environ; e && *e; e++) {
        if (strncmp(*e, "DAXKIT_", 7) != 0) continue;
        const char *name = *e + 7, *eq = strchr(name, '=');
        const struct opt_desc *o = eq ? find_opt(name, (size_t)(eq - name)) : NULL;
        if (o && !values[o - opts]) values[o - opts] = eq + 1;
    }
}

/* Reports DAXKIT_* variables that name no option. Returns how many. */
static int report_unknown(char *const *envp, void (*report)(const char *msg)) {
    extern char **environ;
    char *const *e = envp ? envp : environ;
    int bad = 0;
    for (; e && *e; e++) {
        if (strncmp(*e, "DAXKIT_", 7) != 0) continue;
        const char *name = *e + 7, *eq = strchr(name, '=');
        if (!eq || find_opt(name, (size_t)(eq - name))) continue;
        /* Variables the launcher and test harnesses use for themselves are not options. */
        if (!strncmp(name, "BUILD=", 6) || !strncmp(name, "SRC=", 4) || !strncmp(name, "LIB=", 4) ||
            !strncmp(name, "TEST_", 5) || !strncmp(name, "STATE_", 6))
            continue;
        bad++;
        if (report) {
            char msg[256];
            snprintf(msg, sizeof msg, "unknown variable DAXKIT_%.*s; see `daxkit config --doc` for the options",
                     (int)(eq - name), name);
            report(msg);
        }
    }
    return bad;
}

int dk_config_load(struct dk_config *cfg, char *const *envp, void (*report)(const char *msg)) {
    dk_config_defaults(cfg);
    const char *values[DK_ARRAY_LEN(opts)] = {0};
    env_values(envp, values);
    int bad = 0;
    for (size_t i = 0; i < DK_ARRAY_LEN(opts); i++) {
        const char *v = values[i];
        if (!v || set_value(cfg, &opts[i], v) == 0) continue;
        bad++;
        if (report) report_bad(&opts[i], v, report);
    }
    if (cfg == &dk_cfg) dk_cfg_loaded = true;
    return bad + report_unknown(envp, report);
}

void dk_config_write_doc(FILE *out) {
    fprintf(out, "daxkit options (environment variables; `daxkit run` flags set some of them)\n\n");
    for (size_t i = 0; i < DK_ARRAY_LEN(opts); i++) {
        const struct opt_desc *o = &opts[i];
        char accepted[160];
        describe_accepted(o, accepted, sizeof accepted);
        fprintf(out, "DAXKIT_%s  (%s, default '%s')\n    %s\n    accepts %s\n\n", o->name, type_name(o->type),
                o->def, o->doc, accepted);
    }
}

static void format_value(const struct dk_config *cfg, const struct opt_desc *o, char *buf, size_t len) {
    const char *field = (const char *)cfg + o->offset;
    switch (o->type) {
    case T_BOOL: snprintf(buf, len, "%d", *(const bool *)field); break;
    case T_UINT:
    case T_SIZE: snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)field); break;
    case T_ENUM: snprintf(buf, len, "%s", dk_config_enum_name(o->name, *(const int *)field)); break;
    case T_STR:
    case T_PATH: snprintf(buf, len, "%s", *(const char *const *)field); break;
    }
}

int dk_config_write_nondefault(const struct dk_config *cfg, char *buf, size_t len, const char *sep) {
    struct dk_config def;
    dk_config_defaults(&def);
    int count = 0;
    size_t used = 0;
    if (len) buf[0] = 0;
    for (size_t i = 0; i < DK_ARRAY_LEN(opts); i++) {
        char a[256], b[256];
        format_value(cfg, &opts[i], a, sizeof a);
        format_value(&def, &opts[i], b, sizeof b);
        if (!strcmp(a, b)) continue;
        int n = snprintf(buf + used, len > used ? len - used : 0, "%sDAXKIT_%s=%s", count ? sep : "",
                         opts[i].name, a);
        if (n > 0) used = DK_MIN(len, used + (size_t)n);
        count++;
    }
    return count;
}
