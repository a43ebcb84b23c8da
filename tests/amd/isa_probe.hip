/* SPDX-License-Identifier: MIT */
/* The single-copy-atomic accesses the LL and Lamport protocols rely on, one kernel each, so that
 * check-isa can read the instruction each becomes on AMD targets (doc/amd.md, F4). */
#include "symaddr/team.h"

extern "C" __global__ void probe_st8(uint64_t *p, uint64_t v) { symaddr_team_st8_(p, v); }

extern "C" __global__ void probe_ld8(const uint64_t *p, uint32_t *out)
{
    uint64_t v = symaddr_team_ld8_(p);
    out[0] = (uint32_t)v ^ (uint32_t)(v >> 32); /* one 4-byte store: not confused with the load */
}

extern "C" __global__ void probe_st16(uint32_t *p, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
    const uint32_t w[4] = {a, b, c, d};
    symaddr_team_st16_(p, w);
}

extern "C" __global__ void probe_ld16(const uint32_t *p, uint32_t *out)
{
    uint32_t w[4];
    symaddr_team_ld16_(p, w);
    out[0] = w[0] ^ w[1] ^ w[2] ^ w[3];
}
