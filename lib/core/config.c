/* SPDX-License-Identifier: MIT */
/* Every SYMADDR_* variable the library reads, in one table: its name, default and meaning,
 * and the parser that fills the config. A value that does not parse is refused by
 * symaddr_init with a message that names the variable; nothing falls back silently. */
#include "core/config.h"
#include "core/algos.h"
#include "core/log.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Values config_default leaves in a field whose variable did not parse; symaddr_init refuses
 * them and names the variable. */
#define BAD_SIZE ((size_t)SIZE_MAX - 1)

static bool parse_bool(const char *v, int *out)
{
    static const char *const yes[] = {"1", "yes", "true", "on"}, *const no[] = {"0", "no", "false",
                                                                                "off"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i]))
            return *out = 1, true;
        if (!strcasecmp(v, no[i]))
            return *out = 0, true;
    }
    return false;
}

/* The one parser of sizes, for the library, symaddr-info and symaddr-bench: base 10 (a
 * leading zero is not octal), an optional fraction, an optional K, M, G or T (powers of 1024)
 * with an optional "iB" or "B" (or a bare "B"), nothing else. A fraction must give whole bytes
 * ("1.5K" is 1536, "1.1" is refused). */
symaddr_status_t symaddr_size_parse(const char *text, size_t *bytes_p)
{
    const char *p = text;
    if (!text || !bytes_p || *p < '0' || *p > '9')
        return SYMADDR_ERR_INVALID_ARG;
    unsigned __int128 num = 0, den = 1;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((num = num * 10 + (unsigned)(*p - '0')) > (unsigned __int128)SIZE_MAX)
            return SYMADDR_ERR_INVALID_SIZE;
    if (*p == '.') {
        if (p[1] < '0' || p[1] > '9')
            return SYMADDR_ERR_INVALID_ARG;
        for (p++; *p >= '0' && *p <= '9'; p++) {
            if (den > (unsigned __int128)1 << 64) /* more digits than any size needs */
                return SYMADDR_ERR_INVALID_ARG;
            num = num * 10 + (unsigned)(*p - '0');
            den *= 10;
        }
    }
    unsigned shift = 0;
    const char *units = "KMGT", *u = *p ? strchr(units, *p >= 'a' ? *p - 'a' + 'A' : *p) : NULL;
    if (u && *u) {
        shift = 10 * (unsigned)(u - units + 1);
        p++;
        if (p[0] == 'i' && p[1] == 'B')
            p += 2;
        else if (p[0] == 'B')
            p++;
    } else if (*p == 'B') {
        p++;
    }
    if (*p)
        return SYMADDR_ERR_INVALID_ARG;
    num <<= shift;
    if (num % den)
        return SYMADDR_ERR_INVALID_SIZE; /* not whole bytes */
    num /= den;
    if (num > (unsigned __int128)SIZE_MAX)
        return SYMADDR_ERR_INVALID_SIZE;
    *bytes_p = (size_t)num;
    return SYMADDR_OK;
}

static bool parse_bytes(const char *v, size_t *out)
{
    return symaddr_size_parse(v, out) == SYMADDR_OK;
}

/* A count in base 10: digits only (no sign, no space, no octal or hex). */
static bool parse_uint(const char *v, unsigned long long max, unsigned long long *out)
{
    char *end;
    if (*v < '0' || *v > '9')
        return false;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || x > max)
        return false;
    *out = x;
    return true;
}

/* The backends' names, from their one list (symaddr_backend_name reads it too). */
#define BACKEND_NAME(E, name) [SYMADDR_BACKEND_##E] = #name,
static const char *const backend_names[SYMADDR_BACKEND_COUNT_] = {
    SYMADDR_BACKEND_LIST(BACKEND_NAME)};
#define BACKEND_ONE(E, name) +1
_Static_assert((0 SYMADDR_BACKEND_LIST(BACKEND_ONE)) == SYMADDR_BACKEND_COUNT_,
               "SYMADDR_BACKEND_LIST and symaddr_backend_kind_t agree");

const char *symaddr_config_backend_name(symaddr_backend_kind_t kind)
{
    return (unsigned)kind < sizeof(backend_names) / sizeof(backend_names[0]) ? backend_names[kind]
                                                                             : NULL;
}

static bool set_backend(const char *v, symaddr_config_t *c)
{
    for (unsigned k = 0; k < sizeof(backend_names) / sizeof(backend_names[0]); k++)
        if (!strcasecmp(v, backend_names[k]))
            return c->backend = (symaddr_backend_kind_t)k, true;
    c->backend = (symaddr_backend_kind_t)-1;
    return false;
}

static bool set_heap(const char *v, symaddr_config_t *c)
{
    return parse_bytes(v, &c->heap_bytes) || (c->heap_bytes = BAD_SIZE, false);
}

static bool set_node_size(const char *v, symaddr_config_t *c)
{
    unsigned long long x;
    if (!parse_uint(v, INT_MAX, &x))
        return c->node_size = -1, false;
    c->node_size = (int)x;
    return true;
}

static bool set_validate(const char *v, symaddr_config_t *c)
{
    if (!strcasecmp(v, "args"))
        return c->validate = SYMADDR_VALIDATE_ARGS, true;
    return parse_bool(v, &c->validate) || (c->validate = -1, false);
}

static bool set_timeout(const char *v, symaddr_config_t *c)
{
    unsigned long long x;
    if (!parse_uint(v, UINT_MAX, &x) || x == 0)
        return c->timeout_ms = 0, false;
    c->timeout_ms = (unsigned)x;
    return true;
}

/* The allreduce algorithms' names, from their one list (lib/coll/algos.h). */
#define ALGO_NAME(E, name, dtypes, largest, work, fallback) [SYMADDR_ALLREDUCE_##E] = name,
static const char *const algo_names[SYMADDR_ALLREDUCE_ALGO_COUNT_] = {
    [SYMADDR_ALLREDUCE_AUTO] = "auto", SYMADDR_ALLREDUCE_ALGO_LIST(ALGO_NAME)};

const char *symaddr_allreduce_algo_name(symaddr_allreduce_algo_t algo)
{
    return (unsigned)algo < sizeof(algo_names) / sizeof(algo_names[0]) ? algo_names[algo] : NULL;
}

static bool set_allreduce(const char *v, symaddr_config_t *c)
{
    for (int k = 0; k < (int)(sizeof(algo_names) / sizeof(algo_names[0])); k++)
        if (!strcasecmp(v, algo_names[k]))
            return c->allreduce_algo = (symaddr_allreduce_algo_t)k, true;
    c->allreduce_algo = (symaddr_allreduce_algo_t)-1;
    return false;
}

static bool set_twoshot(const char *v, symaddr_config_t *c)
{
    return parse_bytes(v, &c->twoshot_bytes) || (c->twoshot_bytes = BAD_SIZE, false);
}

static bool set_ll(const char *v, symaddr_config_t *c)
{
    return parse_bytes(v, &c->ll_bytes) || (c->ll_bytes = BAD_SIZE, false);
}

static bool set_lamport(const char *v, symaddr_config_t *c)
{
    return parse_bytes(v, &c->lamport_bytes) || (c->lamport_bytes = BAD_SIZE, false);
}

/* Values of the debug fields whose variable did not parse. */
#define BAD_LEVEL (-1)
#define BAD_SUBSYS (~0u)

static bool set_debug(const char *v, symaddr_config_t *c)
{
    return symaddr_log_parse_level(v, &c->debug_level) || (c->debug_level = BAD_LEVEL, false);
}

static bool set_debug_subsys(const char *v, symaddr_config_t *c)
{
    return symaddr_log_parse_subsys(v, &c->debug_subsys) || (c->debug_subsys = BAD_SUBSYS, false);
}

static bool set_retain(const char *v, symaddr_config_t *c)
{
    return parse_bytes(v, &c->retain_bytes) || (c->retain_bytes = BAD_SIZE, false);
}

static bool set_hip_finegrained(const char *v, symaddr_config_t *c)
{
    return parse_bool(v, &c->hip_finegrained) || (c->hip_finegrained = -1, false);
}

static bool set_no_call_check(const char *v, symaddr_config_t *c)
{
    return parse_bool(v, &c->no_call_check) || (c->no_call_check = -1, false);
}

static bool set_debug_file(const char *v, symaddr_config_t *c)
{
    c->debug_file = v;
    return true;
}

typedef struct config_var {
    const char *name, *dflt, *accepts, *doc;
    bool (*set)(const char *value, symaddr_config_t *cfg);
    const char *field; /* the symaddr_config_t field it sets */
} config_var_t;

static const config_var_t vars[] = {
    {"SYMADDR_BACKEND", "auto", "auto, cpu, cuda or hip",
     "backend of every context (auto: the GPU one when built and a device is present)", set_backend,
     "backend"},
    {"SYMADDR_HEAP_SIZE", "64M", "a byte count with an optional K, M, G or T suffix",
     "symmetric heap per rank (0: none); at most the memory of the node or device", set_heap,
     "heap_bytes"},
    {"SYMADDR_NODE_SIZE", "0", "a number of ranks, 0 for real nodes",
     "split each host into simulated nodes of this many ranks", set_node_size, "node_size"},
    {"SYMADDR_TIMEOUT_MS", "60000", "milliseconds, 1 to 4294967295",
     "deadline of every wait on a peer, in MPI or in a kernel", set_timeout, "timeout_ms"},
    {"SYMADDR_VALIDATE", "0 (the -Dvalidate build option)",
     "0/1, yes/no, true/false, on/off, or args",
     "check every device access through a symaddr table, and every collective's arguments and "
     "where each rank made it (args: the arguments only)",
     set_validate, "validate"},
    {"SYMADDR_ALLREDUCE", "auto",
     "auto, oneshot, twoshot, twoshot-get, twoshot-copy, ll or lamport", "allreduce algorithm",
     set_allreduce, "allreduce_algo"},
    {"SYMADDR_TWOSHOT_BYTES", "the backend's own (cpu 2K, GPU 256K)",
     "a byte count with an optional K, M, G or T suffix",
     "auto allreduce takes two-shot from this size on", set_twoshot, "twoshot_bytes"},
    {"SYMADDR_LL_BYTES", "the backend's own (cpu 128, GPU 32K)",
     "a byte count up to 32K with an optional K suffix", "auto allreduce takes LL up to this size",
     set_ll, "ll_bytes"},
    {"SYMADDR_LAMPORT_BYTES", "the backend's own (cpu 128, GPU 2M)",
     "a byte count up to 2M with an optional K or M suffix",
     "auto allreduce takes Lamport (f32, f16, bf16) up to this size", set_lamport, "lamport_bytes"},
    {"SYMADDR_DEBUG", "WARN", "WARN, INFO or TRACE",
     "what symaddr prints: failures only; once per context what it runs on and with, and each "
     "collective's algorithm when it changes; every allocation, import, registration and exchange "
     "too",
     set_debug, "debug_level"},
    {"SYMADDR_DEBUG_SUBSYS", "ALL",
     "a comma list of INIT, BOOT, ALLOC, COLL, RMA, ENV or ALL; a "
     "leading ^ takes all but those",
     "the subsystems whose INFO and TRACE lines are printed", set_debug_subsys, "debug_subsys"},
    {"SYMADDR_DEBUG_FILE", "- (stderr)",
     "a path in a folder of your own (at most 255 characters); %h is the host name, %p the "
     "process id; a regular file only, created 0600, never through a symbolic link",
     "where symaddr's lines go when the config has no logger", set_debug_file, "debug_file"},
    {"SYMADDR_RETAIN_BYTES", "256M", "a byte count with an optional K, M, G or T suffix",
     "freed ipc and vmm allocations kept mapped per rank, for a later allocation of the same "
     "size (0: free at once); the same on every rank",
     set_retain, "retain_bytes"},
    {"SYMADDR_HIP_FINEGRAINED", "0", "0/1, yes/no, true/false or on/off",
     "hip: users' ipc allocations fine-grained (coherent with peer GPUs, system atomics) rather "
     "than coarse-grained",
     set_hip_finegrained, "hip_finegrained"},
    {"SYMADDR_NO_CALL_CHECK", "0", "0/1, yes/no, true/false or on/off",
     "the LL and Lamport allreduces skip comparing each call among node peers (faster small "
     "calls; ranks that pass another count or op may return OK with data of no use); the same "
     "on every rank",
     set_no_call_check, "no_call_check"},
};

#define NVARS (sizeof(vars) / sizeof(vars[0]))

_Static_assert(SYMADDR_SUB_ALL == 63u,
               "SYMADDR_CONFIG_INITIALIZER's debug_subsys is every subsystem");
_Static_assert(SYMADDR_LOG_WARN == 0, "SYMADDR_CONFIG_INITIALIZER's debug_level is WARN");

void symaddr_config_default(symaddr_config_t *cfg)
{
    if (!cfg)
        return;
    *cfg = (symaddr_config_t)SYMADDR_CONFIG_INITIALIZER;
    cfg->validate = SYMADDR_VALIDATE_DEFAULT;
    for (size_t i = 0; i < NVARS; i++) {
        const char *v = getenv(vars[i].name);
        if (v && *v)
            vars[i].set(v, cfg);
    }
}

/* The refusal of variable name when its value does not parse, as a message; false if it is
 * unset or parses. */
static bool env_refusal(const char *name, char *why, size_t len)
{
    symaddr_config_t scratch;
    for (size_t i = 0; i < NVARS; i++) {
        const char *v = getenv(vars[i].name);
        if (!strcmp(vars[i].name, name) && v && *v && !vars[i].set(v, &scratch)) {
            snprintf(why, len, "%s='%.64s' is not valid: use %s (%s)", vars[i].name, v,
                     vars[i].accepts, vars[i].doc);
            return true;
        }
    }
    return false;
}

symaddr_status_t symaddr_config_check(const symaddr_config_t *c, char *why, size_t len)
{
    const char *var = NULL, *what = NULL;
    symaddr_status_t st = SYMADDR_ERR_INVALID_ARG;
    if (c->size != sizeof(*c)) {
        snprintf(why, len,
                 "the config's size is %zu, this symaddr's is %zu: fill it with "
                 "symaddr_config_default or SYMADDR_CONFIG_INITIALIZER from the symaddr.h the "
                 "library was built with",
                 c->size, sizeof(*c));
        return SYMADDR_ERR_INVALID_ARG;
    }
    if ((int)c->backend < 0 || c->backend >= SYMADDR_BACKEND_COUNT_)
        var = "SYMADDR_BACKEND", what = "backend is not a symaddr_backend_kind_t";
    else if (c->node_size < 0)
        var = "SYMADDR_NODE_SIZE", what = "node_size must be >= 0";
    else if (c->validate != SYMADDR_VALIDATE_OFF && c->validate != SYMADDR_VALIDATE_ON &&
             c->validate != SYMADDR_VALIDATE_ARGS)
        var = "SYMADDR_VALIDATE", what = "validate must be a symaddr_validate_t (0, 1 or 2)";
    else if (c->timeout_ms == 0)
        var = "SYMADDR_TIMEOUT_MS", what = "timeout_ms must be > 0";
    else if ((int)c->allreduce_algo < 0 || c->allreduce_algo >= SYMADDR_ALLREDUCE_ALGO_COUNT_)
        var = "SYMADDR_ALLREDUCE", what = "allreduce_algo is not a symaddr_allreduce_algo_t";
    else if (c->heap_bytes == BAD_SIZE)
        var = "SYMADDR_HEAP_SIZE", what = "heap_bytes is out of range",
        st = SYMADDR_ERR_INVALID_SIZE;
    else if (c->twoshot_bytes > ((size_t)1 << 40))
        var = "SYMADDR_TWOSHOT_BYTES", what = "twoshot_bytes is at most 1T",
        st = SYMADDR_ERR_INVALID_SIZE;
    else if (c->ll_bytes != SIZE_MAX && c->ll_bytes > SYMADDR_CONFIG_LL_MAX_BYTES)
        var = "SYMADDR_LL_BYTES", what = "ll_bytes is at most 32 KiB, the LL inbox",
        st = SYMADDR_ERR_INVALID_SIZE;
    else if (c->lamport_bytes != SIZE_MAX && c->lamport_bytes > SYMADDR_CONFIG_LAMPORT_MAX_BYTES)
        var = "SYMADDR_LAMPORT_BYTES",
        what = "lamport_bytes is at most 2 MiB, a Lamport buffer's largest slot",
        st = SYMADDR_ERR_INVALID_SIZE;
    else if (c->debug_level < SYMADDR_LOG_WARN || c->debug_level > SYMADDR_LOG_TRACE)
        var = "SYMADDR_DEBUG", what = "debug_level must be 0 (WARN), 1 (INFO) or 2 (TRACE)";
    else if (c->debug_subsys & ~(unsigned)SYMADDR_SUB_ALL)
        var = "SYMADDR_DEBUG_SUBSYS", what = "debug_subsys has bits of no subsystem";
    else if (c->retain_bytes == BAD_SIZE)
        var = "SYMADDR_RETAIN_BYTES", what = "retain_bytes is out of range",
        st = SYMADDR_ERR_INVALID_SIZE;
    else if (c->hip_finegrained != 0 && c->hip_finegrained != 1)
        var = "SYMADDR_HIP_FINEGRAINED", what = "hip_finegrained must be 0 or 1";
    else if (c->no_call_check != 0 && c->no_call_check != 1)
        var = "SYMADDR_NO_CALL_CHECK", what = "no_call_check must be 0 or 1";
    else if (c->debug_file && strlen(c->debug_file) > SYMADDR_LOG_PATTERN_MAX)
        var = "SYMADDR_DEBUG_FILE", what = "debug_file is longer than 255 characters";
    if (!var)
        return SYMADDR_OK;
    /* A field config_default could not fill: name the variable and its value. */
    if (!env_refusal(var, why, len))
        snprintf(why, len, "%s (check %s)", what, var);
    return st;
}

int symaddr_config_var(int index, const char **name_p, const char **default_p, const char **doc_p)
{
    if (index < 0 || (size_t)index >= NVARS)
        return 0;
    if (name_p)
        *name_p = vars[index].name;
    if (default_p)
        *default_p = vars[index].dflt;
    if (doc_p)
        *doc_p = vars[index].doc;
    return 1;
}

const char *symaddr_config_var_accepts(int index)
{
    return index < 0 || (size_t)index >= NVARS ? NULL : vars[index].accepts;
}

const char *symaddr_config_var_field(int index)
{
    return index < 0 || (size_t)index >= NVARS ? NULL : vars[index].field;
}

/* Edit distance of a and b (both at most 63 characters are compared): how far a misspelling is
 * from a name. */
static size_t distance(const char *a, const char *b)
{
    size_t n = strlen(a) < 63 ? strlen(a) : 63, m = strlen(b) < 63 ? strlen(b) : 63;
    size_t row[64];
    for (size_t j = 0; j <= m; j++)
        row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[m];
}

/* SYMADDR_* names read by symaddr's other parts, not by the library: the Python package's
 * (its library path, its ctypes switch), and the test suite's own (SYMADDR_TEST_*, and the
 * Iris tests' plugin's SYMADDR_IRIS_*). */
static bool read_elsewhere(const char *name, size_t len)
{
    static const char *const exact[] = {"SYMADDR_LIB", "SYMADDR_NO_FAST_CALL"};
    for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
        if (len == strlen(exact[i]) && !strncmp(name, exact[i], len))
            return true;
    return !strncmp(name, "SYMADDR_TEST_", strlen("SYMADDR_TEST_")) ||
           !strncmp(name, "SYMADDR_IRIS_", strlen("SYMADDR_IRIS_"));
}

int symaddr_config_unknown(char *const *env, int from, char *why, size_t len)
{
    for (int i = from; env && env[i]; i++) {
        const char *e = env[i];
        size_t n = strcspn(e, "=");
        if (strncmp(e, "SYMADDR_", 8) || read_elsewhere(e, n))
            continue;
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)(n < 63 ? n : 63), e);
        const char *near = NULL;
        size_t best = SIZE_MAX;
        bool known = false;
        for (size_t k = 0; k < NVARS && !known; k++) {
            size_t d = distance(name, vars[k].name);
            known = d == 0;
            if (d < best)
                best = d, near = vars[k].name;
        }
        if (known)
            continue;
        /* a near name: a few letters off, for names of the length of ours */
        if (near && best <= 3)
            snprintf(why, len,
                     "%s is set but is not a variable of symaddr: did you mean %s? (symaddr-info "
                     "-e lists them all)",
                     name, near);
        else
            snprintf(why, len,
                     "%s is set but is not a variable of symaddr; symaddr-info -e lists them all",
                     name);
        return i;
    }
    return -1;
}
