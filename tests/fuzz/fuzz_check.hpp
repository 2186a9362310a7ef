// What every fuzz target uses to report a broken invariant: a message, then a crash.
#pragma once

#include <cstdio>
#include <cstdlib>

/// A disagreement or broken invariant: libFuzzer records the input as a crash.
#define FUZZ_CHECK(cond, ...)                                                                                \
    do                                                                                                       \
    {                                                                                                        \
        if (!(cond))                                                                                         \
        {                                                                                                    \
            std::fprintf(stderr, "fuzz check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);             \
            std::fprintf(stderr, __VA_ARGS__);                                                               \
            std::fprintf(stderr, "\n");                                                                      \
            __builtin_trap();                                                                                \
        }                                                                                                    \
    } while (0)
