// The graph tests' soft assertion: prints the failing place and message, counts, and lets the test go on
// (main returns g_fail == 0 ? 0 : 1).
#pragma once
#include <cstdio>

static int g_fail = 0;
#define CHECK(cond, ...)                                        \
  do {                                                          \
    if (!(cond)) {                                              \
      std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                        \
      std::fprintf(stderr, "\n");                               \
      g_fail++;                                                 \
    }                                                           \
  } while (0)
