/* Library constructor and destructor, and the public daxkit_* entry points. */
#include "shim/shim.h"

__attribute__((constructor(101))) static void dk_shim_init(void) { up_init(); }
__attribute__((destructor(101))) static void dk_shim_fini(void) { up_fini(); }

DK_EXPORT const char *daxkit_version(void) { return DAXKIT_VERSION; }
