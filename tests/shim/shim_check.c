/* Description: the tests' independent observer. Runs WITHOUT libdaxkit.so (st_check() starts it with a
 * clean environment) and reports what the kernel file holds. Not a test itself.
 *
 *   shim_check size FILE N                  the kernel size of FILE is N
 *   shim_check pattern FILE OFF LEN SEED    bytes [OFF, OFF+LEN) hold st_pat(SEED, offset)
 *   shim_check image FILE IMAGE             FILE equals IMAGE byte for byte (size too)
 *   shim_check synced FILE IMAGE N          FILE's first N bytes equal IMAGE's; past them (a writer still
 *                                           appending, an extension's zero tail) each byte is 0 or IMAGE's
 *   shim_check records FILE WRITERS PER [partial]
 *                                           FILE is a sequence of intact records; each (writer, seq) with
 *                                           writer < WRITERS, seq < PER appears exactly once (with
 *                                           "partial": at most once, and a writer's records form a prefix)
 *   shim_check counter FILE N               FILE is N lines "%015u\n" holding 1..N in order
 *   shim_check text FILE STRING             FILE holds exactly STRING (C escapes \n allowed)
 * Exit 0 when the check holds, 1 when not (with the first difference printed), 2 on usage errors. */
#include "shim_test.h"

static char *slurp(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "shim_check: open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    struct stat st;
    fstat(fd, &st);
    char *buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    *len = got;
    return buf;
}

static int bad(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "shim_check: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 1;
}

static int check_records(const char *path, unsigned writers, unsigned per, bool partial) {
    size_t len;
    char *buf = slurp(path, &len);
    uint8_t *seen = calloc((size_t)writers * per, 1);
    uint32_t *count = calloc(writers, sizeof *count);
    size_t off = 0;
    unsigned total = 0;
    while (off < len) {
        size_t n = st_rec_check(buf + off, len - off);
        if (!n) return bad("%s: no intact record at offset %zu of %zu (torn, junk or zeros)", path, off, len);
        const struct st_rec *r = (const void *)(buf + off);
        if (r->writer >= writers || r->seq >= per) return bad("%s: record (%u,%u) out of range", path, r->writer, r->seq);
        if (seen[r->writer * per + r->seq]++) return bad("%s: record (%u,%u) twice (second at %zu)", path, r->writer, r->seq, off);
        count[r->writer]++;
        total++;
        off += n;
    }
    for (unsigned w = 0; w < writers; w++) {
        for (unsigned s = 0; s < per; s++) {
            bool want = !partial || s < count[w];
            if (want && !seen[w * per + s])
                return bad("%s: record (%u,%u) missing (%u records in %zu bytes)", path, w, s, total, len);
        }
    }
    printf("shim_check: %s: %u intact records, each once\n", path, total);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    const char *cmd = argv[1], *path = argv[2];
    size_t len;
    if (!strcmp(cmd, "size") && argc == 4) {
        long long want = atoll(argv[3]);
        long long got = st_ksize(path);
        if (got != want) return bad("%s: size %lld, expected %lld", path, got, want);
        return 0;
    }
    if (!strcmp(cmd, "pattern") && argc == 6) {
        uint64_t off = strtoull(argv[3], NULL, 0), n = strtoull(argv[4], NULL, 0);
        uint32_t seed = (uint32_t)strtoul(argv[5], NULL, 0);
        char *buf = slurp(path, &len);
        if (off + n > len) return bad("%s: size %zu, expected at least %llu", path, len, (unsigned long long)(off + n));
        long m = st_mismatch(buf + off, seed, off, n);
        if (m >= 0) return bad("%s: byte at %llu is 0x%02x, expected 0x%02x", path, (unsigned long long)(off + m),
                               (uint8_t)buf[off + m], st_pat(seed, off + m));
        return 0;
    }
    if (!strcmp(cmd, "image") && argc == 4) {
        size_t ilen;
        char *buf = slurp(path, &len), *img = slurp(argv[3], &ilen);
        for (size_t i = 0; i < len && i < ilen; i++)
            if (buf[i] != img[i])
                return bad("%s: byte at %zu is 0x%02x, expected 0x%02x", path, i, (uint8_t)buf[i], (uint8_t)img[i]);
        if (len != ilen) return bad("%s: size %zu, expected %zu (contents agree up to the shorter)", path, len, ilen);
        return 0;
    }
    if (!strcmp(cmd, "synced") && argc == 5) {
        size_t ilen, n = (size_t)strtoull(argv[4], NULL, 0);
        char *buf = slurp(path, &len), *img = slurp(argv[3], &ilen);
        if (len < n) return bad("%s: size %zu, expected at least the %zu bytes synced", path, len, n);
        if (n > ilen) return bad("%s: image %s holds %zu bytes, fewer than the %zu synced", path, argv[3], ilen, n);
        for (size_t i = 0; i < n; i++)
            if (buf[i] != img[i])
                return bad("%s: synced byte at %zu is 0x%02x, expected 0x%02x", path, i, (uint8_t)buf[i], (uint8_t)img[i]);
        for (size_t i = n; i < len; i++)
            if (buf[i] != 0 && (i >= ilen || buf[i] != img[i]))
                return bad("%s: byte at %zu (past the %zu synced) is 0x%02x, expected 0 or 0x%02x", path, i, n,
                           (uint8_t)buf[i], i < ilen ? (uint8_t)img[i] : 0);
        return 0;
    }
    if (!strcmp(cmd, "records") && (argc == 5 || argc == 6))
        return check_records(path, (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]), argc == 6);
    if (!strcmp(cmd, "counter") && argc == 4) {
        unsigned n = (unsigned)atoi(argv[3]);
        char *buf = slurp(path, &len);
        if (len != (size_t)n * 16) return bad("%s: size %zu, expected %u lines of 16 bytes", path, len, n);
        for (unsigned i = 0; i < n; i++) {
            char want[17];
            snprintf(want, sizeof want, "%015u\n", i + 1);
            if (memcmp(buf + i * 16, want, 16) != 0)
                return bad("%s: line %u is '%.15s', expected %u", path, i + 1, buf + i * 16, i + 1);
        }
        return 0;
    }
    if (!strcmp(cmd, "text") && argc == 4) {
        char want[4096];
        size_t w = 0;
        for (const char *s = argv[3]; *s && w < sizeof want - 1; s++) {
            if (s[0] == '\\' && s[1] == 'n') want[w++] = '\n', s++;
            else want[w++] = *s;
        }
        char *buf = slurp(path, &len);
        if (len != w || memcmp(buf, want, w) != 0)
            return bad("%s: holds '%.*s' (%zu bytes), expected '%.*s' (%zu bytes)", path, (int)len, buf, len, (int)w,
                       want, w);
        return 0;
    }
    fprintf(stderr, "shim_check: bad arguments (see the header of tests/shim/shim_check.c)\n");
    return 2;
}
