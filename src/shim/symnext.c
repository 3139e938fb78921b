/* dlsym(RTLD_NEXT, name) from the GNU hash tables of the objects loaded after ours (symnext.h says what it
 * answers and when it declines). The rules mirror glibc's elf/dl-lookup.c (do_lookup_x, check_match) for a
 * dlsym: version NULL, type class 0, DL_LOOKUP_RETURN_NEWEST. */
#include "shim/symnext.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#define OBJECTS_MAX 48 /* objects searched after ours; a program with more loaded at start asks dlsym */

extern ElfW(Dyn) _DYNAMIC[] __attribute__((visibility("hidden"))); /* ours: how our link_map is told */

struct object {
    ElfW(Addr) base;
    const ElfW(Sym) *symtab;
    const char *strtab;
    const ElfW(Half) *versym; /* NULL: no versions */
    const ElfW(Addr) *bloom;
    const uint32_t *buckets;
    const uint32_t *chain; /* indexed by symbol index - symoffset */
    uint32_t nbuckets, symoffset, bloom_mask, bloom_shift;
};

static struct object objects[OBJECTS_MAX];
static unsigned objects_count;
static bool usable;   /* objects[] is complete (release: written once, by the one thread that collects) */
static int collecting; /* the first dk_symnext_init's claim: racing first callers decline to dlsym meanwhile */

/* A dynamic-section address: glibc relocates most entries in place (d_ptr += l_addr), the vDSO's it
 * cannot; an address below the load base is still an offset. */
static const void *dyn_ptr(const struct link_map *m, ElfW(Addr) p) {
    return (const void *)(p < m->l_addr ? p + m->l_addr : p);
}

/* The entry `tag` of m's dynamic section, or NULL. */
static const ElfW(Dyn) *dyn_find(const struct link_map *m, ElfW(Sxword) tag) {
    for (const ElfW(Dyn) *d = m->l_ld; d && d->d_tag != DT_NULL; d++)
        if (d->d_tag == tag) return d;
    return NULL;
}

/* Fills o from m's dynamic section. false when m has no GNU hash table (a lookup would need the SysV one). */
static bool object_read(const struct link_map *m, struct object *o) {
    const ElfW(Dyn) *gh = dyn_find(m, DT_GNU_HASH), *sym = dyn_find(m, DT_SYMTAB), *str = dyn_find(m, DT_STRTAB);
    const ElfW(Dyn) *ver = dyn_find(m, DT_VERSYM);
    if (!gh || !sym || !str) return false;
    const uint32_t *h = dyn_ptr(m, gh->d_un.d_ptr);
    uint32_t bloom_words = h[2];
    if (bloom_words == 0 || (bloom_words & (bloom_words - 1))) return false; /* glibc masks: a power of two */
    *o = (struct object){
        .base = m->l_addr,
        .symtab = dyn_ptr(m, sym->d_un.d_ptr),
        .strtab = dyn_ptr(m, str->d_un.d_ptr),
        .versym = ver ? dyn_ptr(m, ver->d_un.d_ptr) : NULL,
        .nbuckets = h[0],
        .symoffset = h[1],
        .bloom_mask = bloom_words - 1,
        .bloom_shift = h[3],
        .bloom = (const ElfW(Addr) *)(h + 4),
    };
    o->buckets = (const uint32_t *)(o->bloom + bloom_words);
    o->chain = o->buckets + o->nbuckets - o->symoffset;
    return true;
}

/* The name another object's DT_NEEDED gives m: its DT_SONAME, else the last component of its path. */
static const char *object_name(const struct link_map *m) {
    const ElfW(Dyn) *so = dyn_find(m, DT_SONAME), *str = dyn_find(m, DT_STRTAB);
    if (so && str) return (const char *)dyn_ptr(m, str->d_un.d_ptr) + so->d_un.d_val;
    const char *slash = m->l_name ? strrchr(m->l_name, '/') : NULL;
    return slash ? slash + 1 : m->l_name;
}

/* True when an object before m in the list needs m (DT_NEEDED): m was loaded at start-up. */
static bool needed_before(const struct link_map *m) {
    const char *name = object_name(m);
    if (!name || !*name) return false;
    for (const struct link_map *e = _r_debug.r_map; e && e != m; e = e->l_next) {
        const ElfW(Dyn) *str = dyn_find(e, DT_STRTAB);
        for (const ElfW(Dyn) *d = e->l_ld; str && d && d->d_tag != DT_NULL; d++)
            if (d->d_tag == DT_NEEDED && !strcmp((const char *)dyn_ptr(e, str->d_un.d_ptr) + d->d_un.d_val, name))
                return true;
    }
    return false;
}

/* Audit modules (la_symbind) may change what dlsym returns; weak definitions yield to later strong ones. */
static bool loader_rules_plain(void) {
    if (getenv("LD_AUDIT") || getenv("LD_DYNAMIC_WEAK")) return false;
    const struct link_map *main_map = _r_debug.r_map;
    return main_map && !dyn_find(main_map, DT_AUDIT) && !dyn_find(main_map, DT_DEPAUDIT);
}

/* Collects the objects after ours in the loader's list -- the program's global scope, in its order, for
 * the objects loaded at start-up: the loader places itself where the scope has it. Stops at the first one a
 * dlopen loaded (in the list, not necessarily in the scope; they all follow the loader's own object). */
static bool collect(void) {
    const ElfW(Addr) rtld_base = getauxval(AT_BASE), vdso = getauxval(AT_SYSINFO_EHDR);
    if (!rtld_base || !loader_rules_plain()) return false; /* the loader run as a program: no AT_BASE */
    bool self_seen = false, rtld_seen = false;
    for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
        if (vdso && (m->l_addr == vdso || (ElfW(Addr))m->l_ld - vdso < 0x10000)) continue; /* in no scope */
        if (m->l_ld == _DYNAMIC) {
            self_seen = true;
            continue;
        }
        bool rtld = m->l_addr == rtld_base;
        if (rtld && !self_seen) return false; /* we came with a dlopen: RTLD_NEXT searches its scope */
        if (rtld_seen && !rtld && !needed_before(m)) break; /* dlopen'ed: in the list, not the scope */
        rtld_seen = rtld_seen || rtld;
        if (!self_seen) continue;
        if (objects_count == OBJECTS_MAX || !object_read(m, &objects[objects_count])) return false;
        objects_count++;
    }
    return self_seen && rtld_seen;
}

bool dk_symnext_init(void) {
    if (__atomic_exchange_n(&collecting, 1, __ATOMIC_ACQ_REL)) return __atomic_load_n(&usable, __ATOMIC_ACQUIRE);
    bool ok = collect();
    __atomic_store_n(&usable, ok, __ATOMIC_RELEASE);
    return ok;
}

static uint32_t gnu_hash(const char *s) {
    uint32_t h = 5381;
    for (; *s; s++) h = h * 33 + (unsigned char)*s;
    return h;
}

#define ALLOWED_TYPES                                                                                  \
    ((1u << STT_NOTYPE) | (1u << STT_OBJECT) | (1u << STT_FUNC) | (1u << STT_COMMON) | (1u << STT_TLS) | \
     (1u << STT_GNU_IFUNC))

enum verdict { NO_MATCH, MATCH, VERSIONED, DECLINE };

/* check_match for symbol i of o. */
static enum verdict check(const struct object *o, uint32_t i, const char *name) {
    const ElfW(Sym) *s = &o->symtab[i];
    unsigned type = ELF64_ST_TYPE(s->st_info);
    if (s->st_value == 0 && s->st_shndx != SHN_ABS && type != STT_TLS) return NO_MATCH;
    if (!((1u << type) & ALLOWED_TYPES) || strcmp(o->strtab + s->st_name, name)) return NO_MATCH;
    /* what dlsym would not return as plain base + value: glibc resolves these its own way */
    if (type == STT_TLS || type == STT_GNU_IFUNC || s->st_shndx == SHN_ABS || s->st_shndx == SHN_UNDEF)
        return DECLINE;
    if (o->versym && (o->versym[i] & 0x7fff) >= 2) /* versioned: only the default (non-hidden) one counts */
        return (o->versym[i] & 0x8000) ? NO_MATCH : VERSIONED;
    return MATCH;
}

/* The definition of name in o: its index, -1 when none, -2 to decline. */
static int64_t lookup_in(const struct object *o, const char *name, uint32_t h) {
    ElfW(Addr) word = o->bloom[(h / (8 * sizeof(ElfW(Addr)))) & o->bloom_mask];
    unsigned bits = 8 * sizeof(ElfW(Addr));
    if (!((word >> (h % bits)) & (word >> ((h >> o->bloom_shift) % bits)) & 1)) return -1;
    uint32_t i = o->buckets[h % o->nbuckets];
    if (i == 0) return -1;
    int64_t versioned = -1;
    unsigned versions = 0;
    for (;; i++) {
        uint32_t c = o->chain[i];
        if (((c ^ h) >> 1) == 0) {
            enum verdict v = check(o, i, name);
            if (v == DECLINE) return -2;
            if (v == MATCH) return i;
            if (v == VERSIONED && versions++ == 0) versioned = i;
        }
        if (c & 1) break;
    }
    return versions == 1 ? versioned : -1;
}

void *dk_symnext(const char *name) {
    if (!__atomic_load_n(&usable, __ATOMIC_ACQUIRE)) return NULL;
    uint32_t h = gnu_hash(name);
    for (unsigned k = 0; k < objects_count; k++) {
        const struct object *o = &objects[k];
        int64_t i = lookup_in(o, name, h);
        if (i == -2) return NULL;
        if (i < 0) continue;
        switch (ELF64_ST_BIND(o->symtab[i].st_info)) {
        case STB_GLOBAL:
        case STB_WEAK: return (void *)(o->base + o->symtab[i].st_value);
        case STB_LOCAL: continue; /* the loader ignores it and looks further */
        default: return NULL;     /* STB_GNU_UNIQUE: the loader's table of unique symbols decides */
        }
    }
    return NULL;
}
