/* This boot's id (/proc/sys/kernel/random/boot_id): tells a state written earlier in this boot -- the page
 * cache, memory of processes that are gone -- from one a reboot may have lost. */
#ifndef DK_COMMON_BOOT_ID_H
#define DK_COMMON_BOOT_ID_H

#include <stdbool.h>
#include <stdint.h>

/* The 16 bytes of the id's hex digits (read once per process; thread-safe). false when it cannot be read. */
bool dk_boot_id(uint8_t out[16]);

#endif
