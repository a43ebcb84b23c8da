/* SPDX-License-Identifier: MIT */
/* The bootstrap over any operations table: the node split, the groups, and every exchange the
 * library makes, built of the table's sendrecv (the world's allgather and barrier of its own
 * where it has them). Each message is framed with its group and exchange number, so that a
 * message of an exchange that ran out of time on one side is refused on the other, never read
 * as the next one's data. */
#include "bootstrap.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEY_BYTES 256

typedef struct frame {
    uint64_t seq;
    uint32_t group;
    uint32_t magic;
    uint64_t bytes;
} frame_t;
#define FRAME_MAGIC 0x73796d62u /* "symb" */

uint64_t symaddr_bootstrap_deadline(const symaddr_bootstrap_t *b, int fresh)
{
    if (fresh || b->deadline_ns == 0)
        return symaddr_now_ns() + (uint64_t)b->timeout_ms * 1000000u;
    return b->deadline_ns;
}

uint64_t symaddr_bootstrap_agree_deadline(const symaddr_bootstrap_t *b)
{
    uint64_t fresh = symaddr_bootstrap_deadline(b, 1);
    /* within a call, no later than its own deadline plus the timeout: twice the timeout from
     * the call's start, whatever ran out before */
    uint64_t cap = b->deadline_ns + (uint64_t)b->timeout_ms * 1000000u;
    return b->deadline_ns && cap < fresh ? cap : fresh;
}

void symaddr_bootstrap_call_end(symaddr_bootstrap_t *b) { b->deadline_ns = 0; }

void symaddr_bootstrap_call_begin(symaddr_bootstrap_t *b)
{
    b->deadline_ns = symaddr_bootstrap_deadline(b, 1);
}

symaddr_status_t symaddr_group_init(symaddr_group_t *g, uint16_t id, const int *ranks, int n,
                                    int my_rank)
{
    memset(g, 0, sizeof(*g));
    g->id = id;
    g->me = -1;
    g->ranks = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!g->ranks)
        return SYMADDR_ERR_NO_MEMORY;
    g->n = n;
    for (int i = 0; i < n; i++) {
        g->ranks[i] = ranks[i];
        if (ranks[i] == my_rank)
            g->me = i;
    }
    return SYMADDR_OK;
}

void symaddr_group_fini(symaddr_group_t *g)
{
    free(g->ranks);
    memset(g, 0, sizeof(*g));
    g->me = -1;
}

/* Milliseconds left until deadline_ns, at least 1; 0 when it passed. */
static unsigned ms_left(uint64_t deadline_ns)
{
    uint64_t now = symaddr_now_ns();
    if (now >= deadline_ns)
        return 0;
    uint64_t ms = (deadline_ns - now + 999999u) / 1000000u;
    return ms > 0x7fffffffu ? 0x7fffffffu : (unsigned)ms;
}

/* One step of an exchange of g: send to member `to`, receive from member `from` (either -1),
 * both framed with the exchange's number. */
static symaddr_status_t step(symaddr_bootstrap_t *b, const symaddr_group_t *g, int to,
                             const void *send, size_t send_bytes, int from, void *recv,
                             size_t recv_bytes, uint64_t deadline_ns)
{
    unsigned ms = ms_left(deadline_ns);
    if (ms == 0)
        return SYMADDR_ERR_TIMEOUT;
    size_t sb = to >= 0 ? sizeof(frame_t) + send_bytes : 0;
    size_t rb = from >= 0 ? sizeof(frame_t) + recv_bytes : 0;
    char *buf = malloc(sb + rb + 1);
    if (!buf)
        return SYMADDR_ERR_NO_MEMORY;
    if (to >= 0) {
        frame_t f = {.seq = g->seq, .group = g->id, .magic = FRAME_MAGIC, .bytes = send_bytes};
        memcpy(buf, &f, sizeof(f));
        if (send_bytes)
            memcpy(buf + sizeof(f), send, send_bytes);
    }
    symaddr_status_t st = b->ops.sendrecv(b->state, to >= 0 ? g->ranks[to] : -1, buf, sb,
                                          from >= 0 ? g->ranks[from] : -1, buf + sb, rb, ms);
    if (st == SYMADDR_OK && from >= 0) {
        frame_t f;
        memcpy(&f, buf + sb, sizeof(f));
        if (f.magic != FRAME_MAGIC || f.group != g->id || f.seq != g->seq || f.bytes != recv_bytes)
            st = SYMADDR_ERR_PEER; /* another exchange's message: the ranks are out of step */
        else if (recv_bytes)
            memcpy(recv, buf + sb + sizeof(f), recv_bytes);
    }
    free(buf);
    return st;
}

static bool is_world(const symaddr_bootstrap_t *b, const symaddr_group_t *g)
{
    return g == &b->world;
}

symaddr_status_t symaddr_boot_allgather(symaddr_bootstrap_t *b, symaddr_group_t *g,
                                        const void *mine, void *all, size_t bytes,
                                        uint64_t deadline_ns)
{
    if (g->me < 0)
        return SYMADDR_OK;
    g->seq++;
    if (is_world(b, g) && b->ops.allgather) {
        unsigned ms = ms_left(deadline_ns);
        if (ms == 0)
            return SYMADDR_ERR_TIMEOUT;
        /* the operation's own buffer: a late completion never writes the caller's */
        char *tmp = malloc(bytes * (size_t)g->n + 1);
        if (!tmp)
            return SYMADDR_ERR_NO_MEMORY;
        symaddr_status_t st = b->ops.allgather(b->state, mine, tmp, bytes, ms);
        if (st == SYMADDR_OK)
            memcpy(all, tmp, bytes * (size_t)g->n);
        free(tmp);
        return st;
    }
    /* Bruck's: after the step of distance d this rank holds the blocks of members me .. me +
     * 2d - 1, in that order; log2(n) steps. */
    int n = g->n, me = g->me;
    char *tmp = malloc(bytes * (size_t)n + 1);
    if (!tmp)
        return SYMADDR_ERR_NO_MEMORY;
    memcpy(tmp, mine, bytes);
    symaddr_status_t st = SYMADDR_OK;
    for (int have = 1; have < n && st == SYMADDR_OK;) {
        int cnt = have < n - have ? have : n - have;
        st = step(b, g, (me - have + n) % n, tmp, (size_t)cnt * bytes, (me + have) % n,
                  tmp + (size_t)have * bytes, (size_t)cnt * bytes, deadline_ns);
        have += cnt;
    }
    if (st == SYMADDR_OK)
        for (int j = 0; j < n; j++)
            memcpy((char *)all + (size_t)((me + j) % n) * bytes, tmp + (size_t)j * bytes, bytes);
    free(tmp);
    return st;
}

/* Bytes a vector exchange's buffer spans: the end of its last block. */
static size_t extent(int n, const int *counts, const int *displs)
{
    size_t end = 0;
    for (int i = 0; i < n; i++)
        if ((size_t)displs[i] + (size_t)counts[i] > end)
            end = (size_t)displs[i] + (size_t)counts[i];
    return end;
}

/* Pairwise: in step s, member me sends to me + s and receives from me - s. */
static symaddr_status_t pairwise(symaddr_bootstrap_t *b, symaddr_group_t *g, const char *send,
                                 const int *send_counts, const int *send_displs, char *recv,
                                 const int *recv_counts, const int *recv_displs,
                                 uint64_t deadline_ns)
{
    int n = g->n, me = g->me;
    symaddr_status_t st = SYMADDR_OK;
    if (recv_counts[me])
        memcpy(recv + recv_displs[me], send + send_displs[me], (size_t)recv_counts[me]);
    for (int s = 1; s < n && st == SYMADDR_OK; s++) {
        int to = (me + s) % n, from = (me - s + n) % n;
        st = step(b, g, to, send + send_displs[to], (size_t)send_counts[to], from,
                  recv + recv_displs[from], (size_t)recv_counts[from], deadline_ns);
    }
    return st;
}

symaddr_status_t symaddr_boot_alltoallv(symaddr_bootstrap_t *b, symaddr_group_t *g,
                                        const void *send, const int *send_counts,
                                        const int *send_displs, void *recv, const int *recv_counts,
                                        const int *recv_displs, uint64_t deadline_ns)
{
    if (g->me < 0)
        return SYMADDR_OK;
    g->seq++;
    size_t got = extent(g->n, recv_counts, recv_displs);
    char *tmp = malloc(got + 1); /* the caller's recv is written only on success */
    if (!tmp)
        return SYMADDR_ERR_NO_MEMORY;
    symaddr_status_t st =
        pairwise(b, g, send, send_counts, send_displs, tmp, recv_counts, recv_displs, deadline_ns);
    if (st == SYMADDR_OK && got)
        memcpy(recv, tmp, got);
    free(tmp);
    return st;
}

symaddr_status_t symaddr_boot_allgatherv(symaddr_bootstrap_t *b, symaddr_group_t *g,
                                         const void *mine, int mine_bytes, void *all,
                                         const int *counts, const int *displs, uint64_t deadline_ns)
{
    if (g->me < 0)
        return SYMADDR_OK;
    if (counts[g->me] != mine_bytes)
        return SYMADDR_ERR_INVALID_SIZE;
    int *sc = malloc(sizeof(int) * 2 * (size_t)g->n);
    if (!sc)
        return SYMADDR_ERR_NO_MEMORY;
    for (int i = 0; i < g->n; i++) {
        sc[i] = mine_bytes;
        sc[g->n + i] = 0;
    }
    symaddr_status_t st =
        symaddr_boot_alltoallv(b, g, mine, sc, sc + g->n, all, counts, displs, deadline_ns);
    free(sc);
    return st;
}

symaddr_status_t symaddr_boot_allreduce_int(symaddr_bootstrap_t *b, symaddr_group_t *g,
                                            const int *in, int *out, int count, int max,
                                            uint64_t deadline_ns)
{
    if (g->me < 0)
        return SYMADDR_OK;
    size_t bytes = sizeof(int) * (size_t)count;
    int *all = malloc(bytes * (size_t)g->n + 1);
    if (!all)
        return SYMADDR_ERR_NO_MEMORY;
    symaddr_status_t st = symaddr_boot_allgather(b, g, in, all, bytes, deadline_ns);
    for (int k = 0; k < count && st == SYMADDR_OK; k++) {
        int v = all[k];
        for (int i = 1; i < g->n; i++) {
            int w = all[(size_t)i * (size_t)count + (size_t)k];
            v = max ? (w > v ? w : v) : (w < v ? w : v);
        }
        out[k] = v;
    }
    free(all);
    return st;
}

symaddr_status_t symaddr_boot_bcast(symaddr_bootstrap_t *b, symaddr_group_t *g, void *buf,
                                    size_t bytes, int root, uint64_t deadline_ns)
{
    if (g->me < 0)
        return SYMADDR_OK;
    g->seq++;
    symaddr_status_t st = SYMADDR_OK;
    if (g->me != root)
        return step(b, g, -1, NULL, 0, root, buf, bytes, deadline_ns);
    for (int i = 0; i < g->n && st == SYMADDR_OK; i++)
        if (i != root)
            st = step(b, g, i, buf, bytes, -1, NULL, 0, deadline_ns);
    return st;
}

symaddr_status_t symaddr_boot_barrier(symaddr_bootstrap_t *b, symaddr_group_t *g,
                                      uint64_t deadline_ns)
{
    if (g->me < 0)
        return SYMADDR_OK;
    g->seq++;
    if (is_world(b, g) && b->ops.barrier) {
        unsigned ms = ms_left(deadline_ns);
        return ms == 0 ? SYMADDR_ERR_TIMEOUT : b->ops.barrier(b->state, ms);
    }
    /* dissemination: log2(n) steps of empty messages */
    symaddr_status_t st = SYMADDR_OK;
    for (int d = 1; d < g->n && st == SYMADDR_OK; d *= 2)
        st = step(b, g, (g->me + d) % g->n, NULL, 0, (g->me - d + g->n) % g->n, NULL, 0,
                  deadline_ns);
    return st;
}

/* The host's name and boot id: ranks of one kernel on one host agree, containers and network
 * namespaces with names of their own do not. */
static symaddr_status_t default_key(char *key, size_t key_bytes)
{
    char host[128] = "", boot[64] = "";
    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "?");
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot, sizeof(boot), f))
            boot[0] = '\0';
        fclose(f);
        boot[strcspn(boot, "\n")] = '\0';
    }
    snprintf(key, key_bytes, "%s/%s", host, boot);
    return SYMADDR_OK;
}

symaddr_status_t symaddr_bootstrap_start(symaddr_bootstrap_t *b, const symaddr_bootstrap_ops_t *ops,
                                         void *state, int rank, int size, int sim_node_size,
                                         unsigned timeout_ms, char *why, size_t why_len)
{
    memset(b, 0, sizeof(*b));
    b->comm = MPI_COMM_NULL; /* the MPI row sets its own once started */
    b->ops = *ops;
    b->state = state;
    b->rank = rank;
    b->size = size;
    b->timeout_ms = timeout_ms;
    b->node.me = b->leaders.me = -1;
    char(*keys)[KEY_BYTES] = malloc(KEY_BYTES * (size_t)size);
    int *ranks = malloc(sizeof(int) * 2 * (size_t)size), *host_rank = ranks + size;
    symaddr_status_t st = keys && ranks ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    if (st == SYMADDR_OK) {
        for (int r = 0; r < size; r++)
            ranks[r] = r;
        st = symaddr_group_init(&b->world, SYMADDR_GROUP_WORLD, ranks, size, rank);
    }
    if (st != SYMADDR_OK) {
        snprintf(why, why_len, "out of host memory for %d ranks", size);
        goto fail;
    }
    /* The split is the same computation on every rank: ranks that disagree on the node size
     * would make different groups, so they agree first. The first exchange is the one every
     * rank must reach: a rank that never calls init costs the others a timeout here. */
    int sim[2] = {sim_node_size, -sim_node_size}, range[2];
    st = symaddr_boot_allreduce_int(b, &b->world, sim, range, 2, 1,
                                    symaddr_bootstrap_deadline(b, 1));
    if (st == SYMADDR_OK && range[0] != -range[1]) {
        snprintf(why, why_len,
                 "SYMADDR_NODE_SIZE (symaddr_config_t.node_size) differs between ranks: %d on "
                 "some, %d on others; set it alike on every rank",
                 -range[1], range[0]);
        st = SYMADDR_ERR_MISMATCH;
        goto fail;
    } else if (st == SYMADDR_ERR_TIMEOUT) {
        snprintf(why, why_len,
                 "timed out after %u ms waiting for every rank to call symaddr_init; did a rank "
                 "exit or skip it?",
                 timeout_ms);
        goto fail;
    } else if (st != SYMADDR_OK) {
        snprintf(why, why_len, "the bootstrap's exchange failed while the ranks met (%s)",
                 symaddr_strerror(st));
        goto fail;
    }
    char key[KEY_BYTES] = "";
    uint64_t deadline = symaddr_bootstrap_deadline(b, 1);
    unsigned ms = ms_left(deadline);
    st = ops->node_key ? ops->node_key(state, key, sizeof(key) - 1, ms ? ms : 1)
                       : default_key(key, sizeof(key));
    key[sizeof(key) - 1] = '\0';
    if (st == SYMADDR_OK)
        st = symaddr_boot_allgather(b, &b->world, key, keys, KEY_BYTES, deadline);
    if (st != SYMADDR_OK) {
        snprintf(why, why_len, "the ranks could not compare their nodes (%s; timeout %u ms)",
                 symaddr_strerror(st), timeout_ms);
        goto fail;
    }
    /* each rank's place on its host, then its node: the host's ranks in groups of
     * sim_node_size consecutive ones */
    int me_host = 0, host_n = 0, node_n = 0, leaders_n = 0;
    for (int r = 0; r < size; r++) {
        int h = 0;
        for (int q = 0; q < r; q++)
            h += strncmp(keys[q], keys[r], KEY_BYTES) == 0;
        host_rank[r] = h;
    }
    me_host = host_rank[rank];
    for (int r = 0; r < size; r++) {
        if (strncmp(keys[r], keys[rank], KEY_BYTES) != 0)
            continue;
        host_n++;
        if (sim_node_size <= 0 || host_rank[r] / sim_node_size == me_host / sim_node_size)
            ranks[node_n++] = r;
    }
    b->host_size = host_n;
    st = symaddr_group_init(&b->node, SYMADDR_GROUP_NODE, ranks, node_n, rank);
    for (int r = 0; r < size; r++)
        if ((sim_node_size > 0 ? host_rank[r] % sim_node_size : host_rank[r]) == 0)
            ranks[leaders_n++] = r;
    if (st == SYMADDR_OK)
        st = symaddr_group_init(&b->leaders, SYMADDR_GROUP_LEADERS, ranks, leaders_n, rank);
    if (st != SYMADDR_OK) {
        snprintf(why, why_len, "out of host memory for %d ranks", size);
        goto fail;
    }
    b->node_rank = b->node.me;
    b->node_size = b->node.n;
    b->node_to_rank = b->node.ranks;
    free(keys);
    free(ranks);
    return SYMADDR_OK;
fail:
    free(keys);
    free(ranks);
    symaddr_bootstrap_fini(b);
    return st;
}

void symaddr_bootstrap_fini(symaddr_bootstrap_t *b)
{
    if (b->socks) {
        for (int i = 0; i < b->node_size; i++)
            if (b->socks[i] >= 0)
                close(b->socks[i]);
        free(b->socks);
    }
    symaddr_group_fini(&b->world);
    symaddr_group_fini(&b->node);
    symaddr_group_fini(&b->leaders);
    if (b->ops.fini)
        b->ops.fini(b->state);
    memset(b, 0, sizeof(*b));
    b->comm = MPI_COMM_NULL;
    b->node.me = b->leaders.me = -1;
}

symaddr_status_t symaddr_bootstrap_node_allgather(symaddr_bootstrap_t *b, const void *mine,
                                                  void *all, size_t bytes)
{
    return symaddr_boot_allgather(b, &b->node, mine, all, bytes, symaddr_bootstrap_deadline(b, 0));
}
