/* Append strategy per file: DAXKIT_APPEND="default[,glob=strategy...]" (first matching glob wins). */
#include <fnmatch.h>
#include <limits.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "upath/policy.h"

static int word_strategy(const char *w, size_t n) {
    if (n == 5 && !strncmp(w, "stage", 5)) return UP_POLICY_STAGE;
    if (n == 6 && !strncmp(w, "extend", 6)) return UP_POLICY_EXTEND;
    if (n == 4 && !strncmp(w, "auto", 4)) return UP_POLICY_AUTO;
    return -1;
}

int up_policy_validate(const char *spec, char *why, size_t why_len) {
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        const char *w = eq ? eq + 1 : p;
        size_t wn = eq ? n - (size_t)(eq + 1 - p) : n;
        if (n && word_strategy(w, wn) < 0) {
            snprintf(why, why_len, "'%.*s' is not stage, extend or auto (nor GLOB=stage|extend|auto)", (int)n, p);
            return -1;
        }
        p = end ? end + 1 : p + n;
    }
    return 0;
}

enum up_policy up_policy_for(const char *spec, const char *path) {
    enum up_policy def = UP_POLICY_STAGE;
    const char *p = spec;
    char glob[256];
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (!eq) {
            int s = word_strategy(p, n);
            if (s >= 0) def = (enum up_policy)s;
        } else if (path && (size_t)(eq - p) < sizeof glob) {
            memcpy(glob, p, (size_t)(eq - p));
            glob[eq - p] = 0;
            int s = word_strategy(eq + 1, n - (size_t)(eq + 1 - p));
            if (s >= 0 && fnmatch(glob, path, 0) == 0) return (enum up_policy)s;
        }
        p = end ? end + 1 : p + n;
    }
    return def;
}

bool up_glob_list_match(const char *spec, const char *path) {
    if (!spec || !*spec || !path) return false;
    char glob[PATH_MAX];
    while (*spec) {
        const char *end = strchr(spec, ':');
        size_t n = end ? (size_t)(end - spec) : strlen(spec);
        if (n && n < sizeof glob) {
            memcpy(glob, spec, n);
            glob[n] = 0;
            if (fnmatch(glob, path, 0) == 0) return true;
        }
        spec += n + (end ? 1 : 0);
    }
    return false;
}
