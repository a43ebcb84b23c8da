/* SPDX-License-Identifier: MIT */
/* The host clock: the bootstrap's deadlines, the log's timings, and device.h's kernels on the cpu
 * backend read the same one; and how those kernels let a waiting thread's core go. */
#include "core/clock.h"

#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

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

/* sched_yield hands the core only to threads of the caller's scheduling group. Linux puts each
 * session in a group of its own (autogroups), and MPICH's Hydra starts every rank in a session
 * of its own: there a waiting rank spun out its whole time slice before the rank it waited for
 * ran, a millisecond a step of a collective where ranks outnumber cores. A session leader on
 * such a kernel sleeps on every 16th wait instead, which gives the core to any group. */
static int yield_sleeps = -1;

static int yield_must_sleep(void)
{
    int on = 0;
    FILE *f = getsid(0) == getpid() ? fopen("/proc/sys/kernel/sched_autogroup_enabled", "r") : NULL;
    if (f) {
        on = fgetc(f) == '1';
        fclose(f);
    }
    return on;
}

__attribute__((visibility("default"))) void symaddr_yield_host(void)
{
    static __thread unsigned calls;
    int sleeps = __atomic_load_n(&yield_sleeps, __ATOMIC_RELAXED);
    if (sleeps < 0)
        __atomic_store_n(&yield_sleeps, sleeps = yield_must_sleep(), __ATOMIC_RELAXED);
    if (sleeps && (++calls & 15) == 0) {
        struct timespec ts = {0, 1000};
        nanosleep(&ts, NULL);
    } else {
        sched_yield();
    }
}
