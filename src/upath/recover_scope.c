/* Which .daxkit areas a start recovers besides its roots' own (review 10, finding 18).
 *
 * A process keeps the records of a file (strict operation logs, published-size records, DAXKIT_ATOMIC logs)
 * in the area of the root that holds the file: <root>/.daxkit. A file is below every root that holds it,
 * so the roots of two programs sharing a file are one the ancestor of the other. When the dead writer's
 * root was the wider one, its records sit in an area above the starting program's roots, which a start
 * that looked at its roots' areas alone never replayed: the narrower program wrote the file, and the next
 * start with the wider root replayed the dead records over those acknowledged writes.
 *
 * So a start also recovers the area of every ancestor directory of each of its roots, up to the top of the
 * root's file system (a root's area holds records of files on the root's device only): what a start with
 * that ancestor as its root would have recovered, in the same way (an area whose owner lives is left
 * alone). It costs one stat per ancestor level at start-up. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic/alog.h"
#include "common/config.h"
#include "common/log.h"
#include "shim/libc.h"
#include "upath/internal.h"
#include "upath/recover_scope.h"

#define ANCESTORS_MAX 64 /* distinct ancestor areas recovered at one start */

static bool is_root(const char *p) {
    for (int i = 0; i < up_roots_count(); i++)
        if (!strcmp(up_root_at(i)->path, p)) return true;
    return false;
}

/* Cuts p to its parent directory; false at "/". */
static bool to_parent(char *p) {
    char *slash = strrchr(p, '/');
    if (!slash || (slash == p && !p[1])) return false;
    if (slash == p) p[1] = 0;
    else *slash = 0;
    return true;
}

static void recover_area_of(const char *dir) {
    struct up_recover_report rep = {0};
    up_recover_dir(dir, &rep);
    struct alog_dir_report arep = {0};
    if (dk_cfg.atomic_recover_start) alog_recover_named(dir, &arep);
    if (rep.strict.replayed || rep.sizes.rolled_back || arep.recovered)
        dk_log_verbose("%s: recovered what dead processes left in the area of this ancestor of a managed directory",
                       dir);
}

void up_recover_ancestor_areas(void) {
    DK_ERRNO_SAVE;
    static char done[ANCESTORS_MAX][sizeof up_root_at(0)->path];
    int ndone = 0;
    for (int i = 0; i < up_roots_count(); i++) {
        const struct up_root *r = up_root_at(i);
        if (r->mount_root) continue;
        char p[sizeof r->path];
        snprintf(p, sizeof p, "%s", r->path);
        while (to_parent(p)) {
            struct stat st, area;
            if (DK_REAL(stat)(p, &st) != 0 || st.st_dev != r->dev) break; /* another file system: not ours */
            bool seen = is_root(p);
            for (int k = 0; k < ndone && !seen; k++) seen = !strcmp(done[k], p);
            char a[sizeof r->path + 16];
            snprintf(a, sizeof a, "%s/.daxkit", p[1] ? p : "");
            if (!seen && ndone < ANCESTORS_MAX && DK_REAL(lstat)(a, &area) == 0 && S_ISDIR(area.st_mode)) {
                snprintf(done[ndone++], sizeof done[0], "%s", p);
                recover_area_of(p);
            }
        }
    }
    DK_ERRNO_RESTORE;
}
