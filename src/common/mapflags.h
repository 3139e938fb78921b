/* mmap/madvise flags newer than some C libraries' headers (values from the Linux UAPI). */
#ifndef DK_COMMON_MAPFLAGS_H
#define DK_COMMON_MAPFLAGS_H

#include <sys/mman.h>

#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#endif
