/* Description: the library's own RTLD_NEXT lookup (src/shim/symnext.c) answers what dlsym(RTLD_NEXT) answers
 * from inside the library, for every name defined by every object loaded after it (libc's ~2,900 with their
 * versions: posix_spawn@@GLIBC_2.15 beside the hidden GLIBC_2.2.5 one, realpath, glob, ...; ld.so's; another
 * preload's), and the pass-through table holds dlsym's answer in every slot -- with the lookup answering
 * (not declining) each of them, or the start-up saving would be gone without a failure.
 * argv[1]: managed directory (unused); argv[2] (optional): the file name of a library preloaded after
 * libdaxkit.so that redefines fsync and getpid: their lookups must give its definitions, not libc's.
 * Needs the test build's hooks (daxkit_test_symnext, daxkit_test_libc_table_check): skips without them. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include "shim_test.h"

typedef void (*symnext_hook)(const char *name, void **mine, void **dlsyms);
typedef int (*table_hook)(int *declined);

static const void *dyn_ptr(const struct link_map *m, ElfW(Addr) p) {
    return (const void *)(p < m->l_addr ? p + m->l_addr : p);
}

static ElfW(Addr) dyn_get(const struct link_map *m, ElfW(Sxword) tag) {
    for (const ElfW(Dyn) *d = m->l_ld; d->d_tag != DT_NULL; d++)
        if (d->d_tag == tag) return d->d_un.d_ptr;
    return 0;
}

/* Symbol count of an object from its GNU hash table: one past the last chain's end. */
static uint32_t symbol_count(const struct link_map *m) {
    ElfW(Addr) gh = dyn_get(m, DT_GNU_HASH);
    if (!gh) return 0;
    const uint32_t *h = dyn_ptr(m, gh);
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(h + 4) + h[2]);
    const uint32_t *chain = buckets + h[0];
    uint32_t last = 0;
    for (uint32_t b = 0; b < h[0]; b++) last = buckets[b] > last ? buckets[b] : last;
    if (last < h[1]) return h[1];
    while (!(chain[last - h[1]] & 1)) last++;
    return last + 1;
}

struct tally {
    unsigned names, answered, declined;
};

/* Every defined name of m: the library's answer, when it gives one, must be dlsym's. */
static void check_object(const struct link_map *m, symnext_hook hook, struct tally *t) {
    const ElfW(Sym) *symtab = dyn_ptr(m, dyn_get(m, DT_SYMTAB));
    const char *strtab = dyn_ptr(m, dyn_get(m, DT_STRTAB));
    uint32_t n = symbol_count(m);
    for (uint32_t i = 1; i < n; i++) {
        if (symtab[i].st_shndx == SHN_UNDEF || !strtab[symtab[i].st_name]) continue;
        const char *name = strtab + symtab[i].st_name;
        void *mine, *theirs;
        hook(name, &mine, &theirs);
        t->names++;
        if (!mine) {
            t->declined++;
            continue;
        }
        t->answered++;
        CHECK(mine == theirs, "%s (in %s): the library's lookup gave %p, dlsym(RTLD_NEXT) %p", name, m->l_name, mine,
              theirs);
    }
}

/* The object an address lies in (dladdr), by file name. */
static bool in_object(void *addr, const char *file) {
    Dl_info info;
    return dladdr(addr, &info) && info.dli_fname && strstr(info.dli_fname, file);
}

int main(int argc, char **argv) {
    (void)st_dir(argc, argv);
    const char *next_lib = argc > 2 ? argv[2] : NULL;
    symnext_hook hook = (symnext_hook)dlsym(RTLD_DEFAULT, "daxkit_test_symnext");
    table_hook table = (table_hook)dlsym(RTLD_DEFAULT, "daxkit_test_libc_table_check");
    if (!hook || !table) SKIP("libdaxkit.so has no test hooks (a release build?)");

    int declined = -1;
    int bad = table(&declined);
    CHECK(bad == 0, "%d slot(s) of the pass-through table differ from dlsym's answer (listed above)", bad);
    CHECK(declined == 0, "the library's lookup declined %d name(s) of its own table: they went to dlsym", declined);
    printf("pass-through table: every slot is dlsym's answer, none declined\n");

    const struct link_map *m = _r_debug.r_map;
    while (m && !strstr(m->l_name, "libdaxkit")) m = m->l_next;
    CHECK(m != NULL, "libdaxkit.so not in the loader's list");
    struct tally all = {0};
    unsigned objects = 0;
    for (m = m->l_next; m; m = m->l_next) {
        if (!dyn_get(m, DT_GNU_HASH)) continue; /* the vDSO's is there, but it is in no scope */
        struct tally t = {0};
        check_object(m, hook, &t);
        printf("%s: %u names, %u answered as dlsym does, %u declined\n", m->l_name, t.names, t.answered, t.declined);
        all.names += t.names, all.answered += t.answered, all.declined += t.declined;
        objects++;
    }
    CHECK(objects >= 2 && all.names > 1000, "only %u objects, %u names after libdaxkit.so: libc not among them?",
          objects, all.names);
    /* declines: indirect functions (memcpy, strlen, ...), thread-local and absolute symbols -- a few hundred */
    CHECK(all.answered * 4 > all.names * 3, "only %u of %u names answered: the lookup declines too often",
          all.answered, all.names);

    /* two versions in libc, the old one hidden: the default one it must be */
    void *mine, *theirs, *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    void *v215 = libc ? dlvsym(libc, "posix_spawn", "GLIBC_2.15") : NULL;
    void *v225 = libc ? dlvsym(libc, "posix_spawn", "GLIBC_2.2.5") : NULL;
    if (v215 && v225 && v215 != v225) {
        hook("posix_spawn", &mine, &theirs);
        CHECK(mine == v215, "posix_spawn: the library's lookup gave %p, the default version GLIBC_2.15 is %p (the "
              "hidden GLIBC_2.2.5 one %p)", mine, v215, v225);
        printf("posix_spawn: the default version, GLIBC_2.15\n");
    } else {
        NOTE("libc has no hidden posix_spawn@GLIBC_2.2.5 beside GLIBC_2.15: the version check is the loop's only");
    }
    if (next_lib) {
        const char *names[] = {"fsync", "getpid"};
        for (size_t i = 0; i < 2; i++) {
            hook(names[i], &mine, &theirs);
            CHECK(mine && in_object(mine, next_lib), "%s: the library's lookup gave %p, not %s's definition", names[i],
                  mine, next_lib);
        }
        printf("a library preloaded after libdaxkit.so: its fsync and getpid are found first\n");
    }
    printf("ok: %u names in %u objects: %u answered exactly as dlsym(RTLD_NEXT), %u declined (dlsym's then)\n",
           all.names, objects, all.answered, all.declined);
    return 0;
}
