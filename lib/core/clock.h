/* SPDX-License-Identifier: MIT */
/* The host clock every deadline of symaddr reads. */
#ifndef SYMADDR_LIB_CLOCK_H
#define SYMADDR_LIB_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t symaddr_now_ns(void);
/* The same clock for device.h's cpu path (exported: kernels built by users call it). */
uint64_t symaddr_clock_host_ns(void);

#ifdef __cplusplus
}
#endif

#endif
