/* This boot's id (boot_id.h). */
#include "common/boot_id.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/dk.h"
#include "common/internal_fd.h"
#include "shim/libc.h"

bool dk_boot_id(uint8_t out[16]) {
    static uint8_t id[16];
    static int state; /* 0: not read, 1: read, -1: unreadable */
    int st = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (st == 0) {
        DK_ERRNO_SAVE;
        char text[64] = {0};
        int fd = dk_ifd_openat(AT_FDCWD, "/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC, 0);
        ssize_t n = fd >= 0 ? dk_libc()->read(fd, text, sizeof text - 1) : -1;
        if (fd >= 0) dk_libc()->close(fd);
        DK_ERRNO_RESTORE;
        uint8_t v[16] = {0};
        int digits = 0;
        for (ssize_t i = 0; i < n && digits < 32; i++) {
            char c = text[i];
            int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (x >= 0) v[digits / 2] |= (uint8_t)(x << (digits % 2 ? 0 : 4)), digits++;
        }
        if (digits == 32) memcpy(id, v, sizeof id);
        st = digits == 32 ? 1 : -1;
        __atomic_store_n(&state, st, __ATOMIC_RELEASE); /* racing readers compute the same */
    }
    if (st == 1) memcpy(out, id, sizeof id);
    return st == 1;
}
