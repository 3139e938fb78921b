/* dlsym(RTLD_NEXT, name) answered from the loaded objects' own GNU hash tables, without the loader.
 *
 * Why: the pass-through table (libc.def, ~155 names) was resolved with dlsym at every process start --
 * ~130,000 instructions of a start's ~440,000 (session 15): each call takes the loader's lock, finds the
 * calling object by address and sets up error catching. Resolving each slot lazily instead deadlocked
 * (review 15, finding 3: a first use inside another library's constructor, with the loader's lock held
 * by a thread waiting for ours). This lookup takes no lock and allocates nothing.
 *
 * What it answers, and when it declines (the caller then asks dlsym, which is always right):
 * - only for an object loaded at start-up (a preload, or a program linked with it): then RTLD_NEXT searches
 *   the program's global scope after that object, and the loader keeps its list of loaded objects in that
 *   order (the vDSO, which is in no scope, skipped). A library loaded by dlopen declines (its scope is its
 *   loader's);
 * - the symbol dlsym picks: the first object defining the name; in it the unversioned definition or the
 *   single non-hidden ("default", name@@V) version -- dlsym's DL_LOOKUP_RETURN_NEWEST rule, so
 *   posix_spawn is GLIBC_2.15's, not the hidden GLIBC_2.2.5 one; weak counts as global, as the loader
 *   does unless LD_DYNAMIC_WEAK is set;
 * - declines a name whose definition is unusual (an indirect function that dlsym would call, thread-local,
 *   absolute, STB_GNU_UNIQUE), every name when an object after us has no GNU hash table, when more objects
 *   are loaded than it keeps, and under LD_AUDIT or LD_DYNAMIC_WEAK (they change what the loader binds).
 * A test compares every name defined by every object after the library with dlsym's answer
 * (tests/shim/shim_symnext.c). */
#ifndef DK_SHIM_SYMNEXT_H
#define DK_SHIM_SYMNEXT_H

#include <stdbool.h>

/* Reads the objects after ours, once (a caller racing the first one gets false until it is done). Returns
 * true when dk_symnext can answer; false means every lookup declines. */
bool dk_symnext_init(void);

/* The address dlsym(RTLD_NEXT, name) returns, or NULL when this lookup declines (not found included: the
 * caller asks dlsym). */
void *dk_symnext(const char *name);

#endif
