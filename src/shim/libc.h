/* The pass-through table: every call daxkit does not serve goes to the next definition of the symbol
 * (normally libc), found once, at the first call or the library's start-up, as dlsym(RTLD_NEXT) finds it --
 * never a hard-coded library path. The preload library reads the loaded objects' hash tables itself
 * (symnext.h: no loader lock, ~1/6 of dlsym's instructions) and asks dlsym for a name it declines. Internal code
 * also calls the kernel through this table, so a test can fail the Nth call of any fixed-argument
 * function (DAXKIT_TEST_FAIL in a test build, or dk_libc_fail_nth from a unit test). */
#ifndef DK_SHIM_LIBC_H
#define DK_SHIM_LIBC_H

#include <dirent.h>
#include <pthread.h>
#include <threads.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <utime.h>

#undef fread_unlocked /* a macro in optimised builds; we need the function */

struct dk_libc {
#define F(ret, name, params, args, failval) ret(*name) params;
#define V(ret, name, params) ret(*name) params;
#include "shim/libc.def"
#undef F
#undef V
};

/* Resolves the table on first use (thread-safe, idempotent) and returns it. */
const struct dk_libc *dk_libc(void);
extern struct dk_libc dk_libc_table __attribute__((visibility("hidden")));
extern int dk_libc_ready __attribute__((visibility("hidden")));
#define DK_REAL(name) (__builtin_expect(dk_libc_ready, 1) ? dk_libc_table.name : dk_libc()->name)
/* The same where the library is on (up_enabled): up_init resolves the table before it turns the library on, so
 * the look at dk_libc_ready is not needed (the pass-through entry points: shim.h dk_pt_none; session 26). */
#define DK_REAL_ON(name) (dk_libc_table.name)

/* `err` value for pwrite (the library's writes go through it): instead of failing, the call moves half the bytes
 * (at least one) and returns that short count, as a kernel does when a device fills up part-way. */
#define DK_LIBC_FAULT_SHORT (-2)

/* Test hook: the `nth` call (1-based, counted from now) of `name` fails with `err` (or, with
 * DK_LIBC_FAULT_SHORT, comes back short); with `sticky` every later call does too. Returns 0, or -1 if
 * `name` is unknown, variadic, or cannot come back short. */
int dk_libc_fail_nth(const char *name, unsigned long nth, int err, int sticky);
/* Parses "call:nth:errno[:sticky]" (errno by name or number, or SHORT) and arms it. Returns 0 or -1. */
int dk_libc_fail_parse(const char *spec);
/* Restores every slot to the real function. */
void dk_libc_fail_reset(void);

#endif
