#ifndef DK_UPATH_POLICY_H
#define DK_UPATH_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum up_policy { UP_POLICY_STAGE, UP_POLICY_EXTEND, UP_POLICY_AUTO };

/* 0 when `spec` is a valid DAXKIT_APPEND value, else -1 with a reason in why. */
int up_policy_validate(const char *spec, char *why, size_t why_len);
/* The policy for `path` (absolute; globs match the whole path, '*' crosses '/'). */
enum up_policy up_policy_for(const char *spec, const char *path);
/* True when `path` matches one of the colon-separated globs in `spec` (DAXKIT_ATOMIC, DAXKIT_ATOMIC_MMAP). */
bool up_glob_list_match(const char *spec, const char *path);

#endif
