#include "common/fhandle.h"

#include <errno.h>

int dk_fhandle_of_fd(int fd, struct dk_fhandle *out) {
    int saved = errno, mount_id;
    out->u.h.handle_bytes = MAX_HANDLE_SZ;
    int rc = name_to_handle_at(fd, "", &out->u.h, &mount_id, AT_EMPTY_PATH);
    errno = saved;
    return rc == 0 && out->u.h.handle_bytes <= MAX_HANDLE_SZ ? 0 : -1;
}
