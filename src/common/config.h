/* Configuration: one table (options.def) drives parsing, documentation and the banner. */
#ifndef DK_COMMON_CONFIG_H
#define DK_COMMON_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum dk_mode { DK_MODE_POSIX, DK_MODE_SYNC, DK_MODE_STRICT };
enum dk_persist_choice { DK_PERSIST_AUTO, DK_PERSIST_FLUSH };
enum dk_extend_sync { DK_EXTEND_SYNC_CUT, DK_EXTEND_SYNC_KEEP };
enum dk_flush_choice { DK_FLUSH_AUTO, DK_FLUSH_CLWB, DK_FLUSH_CLFLUSHOPT, DK_FLUSH_CLFLUSH };
enum dk_crc_fold_choice { DK_CRC_FOLD_AUTO, DK_CRC_FOLD_AVX512, DK_CRC_FOLD_PCLMUL, DK_CRC_FOLD_OFF };
enum dk_atomic_commit { DK_ATOMIC_COMMIT_AUTO, DK_ATOMIC_COMMIT_WRITE, DK_ATOMIC_COMMIT_FSYNC };

#define DK_PATH_OPT_MAX 200 /* bytes of a PATH option's value: room for "/stats.PID" and the like after it */
/* The number the library's kept descriptors move to or above: 64 below RLIMIT_NOFILE's soft limit, out of
 * the way of the program's open() (which gets the lowest free number), but never above 960 -- the default
 * limit's (1024) floor. The kernel's descriptor table grows to cover the highest open descriptor and never
 * shrinks (exec keeps it; fork copies it): one descriptor at 19,936 under a limit of 20,000 made every
 * daxkit process's table 32,768 entries, and the start-up's /proc/self/fd scan walks all of them (100-150
 * us against 17-29 us with 1,024). */
#define DK_INTERNAL_FD_FLOOR_MAX 960
static inline int dk_internal_fd_floor(long nofile_soft_limit, bool limited) {
    if (!limited) return 512;
    long floor = nofile_soft_limit - 64;
    return (int)(floor < 16 ? 16 : floor > DK_INTERNAL_FD_FLOOR_MAX ? DK_INTERNAL_FD_FLOOR_MAX : floor);
}

struct dk_config {
#define DK_FIELD_BOOL bool
#define DK_FIELD_UINT uint64_t
#define DK_FIELD_SIZE uint64_t
#define DK_FIELD_ENUM int
#define DK_FIELD_STR const char *
#define DK_FIELD_PATH const char *
#define OPT(field, NAME, TYPE, def, lo, hi, values, doc) DK_FIELD_##TYPE field;
#include "common/options.def"
#undef OPT
};

extern struct dk_config dk_cfg __attribute__((visibility("hidden")));
/* True once dk_config_load has filled dk_cfg (the library's start-up, up_init); a program that uses only
 * the engine (tests linking dkcore) has no loaded dk_cfg and reads single options with dk_config_env_bool. */
extern bool dk_cfg_loaded;

/* Fills *cfg from defaults and the environment `envp` (NULL: the process environment, read with
 * getenv). Bad values keep their default. Returns the number of bad variables; `report` (may be NULL)
 * receives one message per bad variable naming it and the accepted values. Unknown DAXKIT_* names are
 * reported too (a typo must not silently do nothing). */
int dk_config_load(struct dk_config *cfg, char *const *envp, void (*report)(const char *msg));
/* The BOOL option DAXKIT_<name> from the process environment, parsed as dk_config_load parses it
 * (1/yes/true/on, 0/no/false/off); `def` when unset or not a valid value. */
bool dk_config_env_bool(const char *name, bool def);
/* The ENUM option DAXKIT_<name> (its index in the option's values) from the process environment, parsed as
 * dk_config_load parses it; `def` when unset or not a valid value -- then `report` (may be NULL) receives
 * dk_config_load's message for it. For a program that loads no configuration (`daxkit recover`). */
int dk_config_env_enum(const char *name, int def, void (*report)(const char *msg));
/* Fills *cfg with defaults only. */
void dk_config_defaults(struct dk_config *cfg);
/* Writes the option reference (name, type, default, bounds, doc) as text. */
void dk_config_write_doc(FILE *out);
/* Writes "DAXKIT_NAME=value" for each non-default value, separated by `sep`. Returns count. */
int dk_config_write_nondefault(const struct dk_config *cfg, char *buf, size_t len, const char *sep);
/* Name of an enum value, e.g. dk_config_enum_name("MODE", DK_MODE_SYNC) == "sync". */
const char *dk_config_enum_name(const char *option, int value);
/* "test" when this build honours the test-only DAXKIT_TEST_* variables (crash points, fault injection,
 * the atomic journal window), "release" otherwise (`make release`). */
const char *dk_build_kind(void);

#endif
