/* SPDX-License-Identifier: MIT */
/* The host clock: the bootstrap's deadlines, the log's timings, and device.h's kernels on the cpu
 * backend read the same one. */
#include "core/clock.h"

#include <time.h>

uint64_t symaddr_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

__attribute__((visibility("default"))) uint64_t symaddr_clock_host_ns(void)
{
    return symaddr_now_ns();
}
