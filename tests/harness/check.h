/* A counting CHECK for C test programs that report every failed expectation and exit with the count at
 * the end (`return dk_check_failures ? 1 : 0;`), rather than stop at the first (tests/shim's CHECK). */
#ifndef DK_TESTS_HARNESS_CHECK_H
#define DK_TESTS_HARNESS_CHECK_H

#include <stdio.h>

static unsigned long dk_check_failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            dk_check_failures++;                                               \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);             \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
        }                                                                      \
    } while (0)

#endif
