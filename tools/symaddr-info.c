/* SPDX-License-Identifier: MIT */
/* symaddr-info: what a context sees: backend, devices, node groups, the locality map, and what
 * each provider can do here. symaddr-info -e lists the SYMADDR_* variables instead; --json
 * prints either as JSON, for scripts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "symaddr/symaddr.h"

static const char class_letter[] = {'S', 'G', 'N', 'F', 'R'};

/* -e: every SYMADDR_* variable, its value in force here, its default and meaning. */
static int print_env(int json)
{
    const char *name, *dflt, *doc;
    json_out_t j;
    json_init(&j, json ? stdout : NULL);
    json_begin(&j, '[', 0);
    if (!json)
        printf("%-22s %-14s %s\n", "variable", "set to", "default: meaning (accepts)");
    for (int i = 0; symaddr_config_var(i, &name, &dflt, &doc); i++) {
        const char *v = getenv(name), *accepts = symaddr_config_var_accepts(i);
        if (!json) {
            printf("%-22s %-14s %s: %s\n%-37s accepts %s\n", name, v && *v ? v : "-", dflt, doc, "",
                   accepts);
            continue;
        }
        json_begin(&j, '{', 1);
        json_str(&j, "name", name);
        json_key(&j, "value");
        if (v && *v)
            json_string(&j, v);
        else
            json_null(&j);
        json_str(&j, "default", dflt);
        json_str(&j, "doc", doc);
        json_str(&j, "accepts", accepts);
        json_end(&j, '}');
    }
    json_end(&j, ']');
    if (json)
        printf("\n");
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: symaddr-info [-e] [--json]\n"
               "Report what a symaddr context sees under mpirun: the build (backends compiled),\n"
               "backend, devices, node groups, the locality map, and what each provider can do.\n"
               "\n"
               "  -e             every SYMADDR_* variable: its value here, default, meaning and\n"
               "                 what it accepts (needs no MPI)\n"
               "      --json     the report (or with -e, the variables) as JSON\n"
               "  -h, --help     this text\n"
               "      --version  symaddr's version\n");
}

/* The header this tool was built with against the library it runs with: 0 when they agree. */
static int version_check(int *major, int *minor, int *patch)
{
    symaddr_version(major, minor, patch);
    return *major != SYMADDR_VERSION_MAJOR || *minor != SYMADDR_VERSION_MINOR ||
           *patch != SYMADDR_VERSION_PATCH;
}

int main(int argc, char **argv)
{
    symaddr_context_t *ctx;
    const symaddr_locality_t *loc;
    symaddr_status_t st;

    int json = 0, env = 0, major, minor, patch;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-e"))
            env = 1;
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return usage(stdout), 0;
        else if (!strcmp(argv[i], "--version")) {
            symaddr_version(&major, &minor, &patch);
            printf("symaddr-info (symaddr) %d.%d.%d\n", major, minor, patch);
            return 0;
        } else {
            fprintf(stderr, "symaddr-info: invalid option '%s'\n", argv[i]);
            return usage(stderr), 2;
        }
    }
    int skew = version_check(&major, &minor, &patch);
    if (skew)
        fprintf(stderr,
                "symaddr-info: warning: built with symaddr.h %d.%d.%d but running with "
                "libsymaddr %d.%d.%d; rebuild against the library you run\n",
                SYMADDR_VERSION_MAJOR, SYMADDR_VERSION_MINOR, SYMADDR_VERSION_PATCH, major, minor,
                patch);
    if (env)
        return print_env(json); /* needs no MPI */
    MPI_Init(&argc, &argv);
    if ((st = symaddr_init(MPI_COMM_WORLD, NULL, &ctx)) != SYMADDR_OK) {
        fprintf(stderr, "symaddr-info: %s\n", symaddr_strerror(st));
        MPI_Finalize();
        return 1;
    }
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    symaddr_locality_get(ctx, &loc);
    char *row = malloc((size_t)size + 1), *all = malloc((size_t)size * ((size_t)size + 1));
    for (int t = 0; t < size; t++)
        row[t] = class_letter[loc->peer_class[t]];
    row[size] = 0;
    MPI_Gather(row, size + 1, MPI_CHAR, all, size + 1, MPI_CHAR, 0, symaddr_comm(ctx));

    /* Each provider that allocates: can it allocate here, and with which capabilities. */
    static const symaddr_provider_kind_t kinds[] = {SYMADDR_PROVIDER_HEAP, SYMADDR_PROVIDER_IPC,
                                                    SYMADDR_PROVIDER_VMM};
    enum { NPROV = sizeof(kinds) / sizeof(kinds[0]) };
    static const struct {
        uint64_t bit;
        const char *name;
    } caps[] = {{SYMADDR_CAP_LOAD_STORE, "load/store"},
                {SYMADDR_CAP_ATOMICS, "atomics"},
                {SYMADDR_CAP_SYSTEM_ATOMICS, "system-atomics"},
                {SYMADDR_CAP_COHERENT, "coherent"},
                {SYMADDR_CAP_OWNED, "owned"},
                {SYMADDR_CAP_FABRIC, "fabric-handle"}};
    enum { NCAPS = sizeof(caps) / sizeof(caps[0]) };
    char prov_line[NPROV][300], prov_why[NPROV][200];
    uint64_t prov_caps[NPROV] = {0}, prov_maps[NPROV] = {0};
    int prov_ok[NPROV] = {0};
    for (int k = 0; k < NPROV; k++) {
        symaddr_provider_t *p;
        symaddr_map_t *m;
        void *ptr;
        prov_why[k][0] = 0;
        st = symaddr_provider_get(ctx, kinds[k], &p);
        if (st == SYMADDR_OK && (st = symaddr_symmetric_alloc(p, 4096, &ptr, &m)) == SYMADDR_OK) {
            prov_ok[k] = 1;
            prov_caps[k] = m->capabilities;
            prov_maps[k] = m->allocation_bytes;
            int n = snprintf(prov_line[k], sizeof(prov_line[k]), "yes  caps 0x%llx",
                             (unsigned long long)m->capabilities);
            for (int c = 0; c < NCAPS; c++)
                if (m->capabilities & caps[c].bit)
                    n += snprintf(prov_line[k] + n, sizeof(prov_line[k]) - (size_t)n, " %s",
                                  caps[c].name);
            snprintf(prov_line[k] + n, sizeof(prov_line[k]) - (size_t)n, ", 4096 B maps %llu B",
                     (unsigned long long)m->allocation_bytes);
            symaddr_symmetric_free(p, ptr);
        } else {
            snprintf(prov_why[k], sizeof(prov_why[k]), "%s", symaddr_last_error(ctx));
            snprintf(prov_line[k], sizeof(prov_line[k]), "no   (%.200s)", prov_why[k]);
        }
    }
    if (rank == 0 && json) {
        char header[32], library[32];
        json_out_t j;
        json_init(&j, stdout);
        snprintf(header, sizeof(header), "%d.%d.%d", SYMADDR_VERSION_MAJOR, SYMADDR_VERSION_MINOR,
                 SYMADDR_VERSION_PATCH);
        snprintf(library, sizeof(library), "%d.%d.%d", major, minor, patch);
        json_begin(&j, '{', 0);
        json_key(&j, "version");
        json_begin(&j, '{', 0);
        json_str(&j, "header", header);
        json_str(&j, "library", library);
        json_end(&j, '}');
        json_str(&j, "build", symaddr_build_info());
        json_key(&j, "built");
        json_begin(&j, '[', 0);
        for (int b = SYMADDR_BACKEND_CPU; b < SYMADDR_BACKEND_COUNT_; b++)
            if (symaddr_backend_built((symaddr_backend_kind_t)b))
                json_string(&j, symaddr_backend_name((symaddr_backend_kind_t)b));
        json_end(&j, ']');
        json_str(&j, "backend", symaddr_backend_name(symaddr_backend(ctx)));
        json_num(&j, "ranks", size, 0);
        json_num(&j, "node_size", loc->node_size, 0);
        json_num(&j, "rank_stride", loc->rank_stride, 0);
        json_key(&j, "devices");
        json_begin(&j, '[', 0);
        for (int r = 0; r < size; r++)
            json_number(&j, loc->device[r], 0);
        json_end(&j, ']');
        json_key(&j, "providers");
        json_begin(&j, '{', 0);
        for (int k = 0; k < NPROV; k++) { /* {"allocates", "capabilities", "caps",
                                              "maps_bytes"} or {"allocates", "why"} */
            json_key(&j, symaddr_provider_name(kinds[k]));
            json_begin(&j, '{', 0);
            json_key(&j, "allocates");
            json_bool(&j, prov_ok[k]);
            if (prov_ok[k]) {
                json_key(&j, "capabilities");
                json_begin(&j, '[', 0);
                for (int c = 0; c < NCAPS; c++)
                    if (prov_caps[k] & caps[c].bit)
                        json_string(&j, caps[c].name);
                json_end(&j, ']');
                json_num(&j, "caps", (double)prov_caps[k], 0);
                json_num(&j, "maps_bytes", (double)prov_maps[k], 0);
            } else {
                json_str(&j, "why", prov_why[k]);
            }
            json_end(&j, '}');
        }
        json_end(&j, '}');
        json_key(&j, "locality");
        json_begin(&j, '[', 0);
        for (int r = 0; r < size; r++)
            json_string(&j, all + (size_t)r * ((size_t)size + 1));
        json_end(&j, ']');
        json_end(&j, '}');
        printf("\n");
    } else if (rank == 0) {
        printf("symaddr %d.%d.%d (header), %d.%d.%d (library)%s\n", SYMADDR_VERSION_MAJOR,
               SYMADDR_VERSION_MINOR, SYMADDR_VERSION_PATCH, major, minor, patch,
               skew ? ": they differ" : "");
        printf("build         %s\n", symaddr_build_info());
        char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(mpi, &len);
        mpi[strcspn(mpi, "\n,")] = 0;
        printf("MPI           %s (running)\n", mpi);
        printf("built with   ");
        for (int b = SYMADDR_BACKEND_CPU; b < SYMADDR_BACKEND_COUNT_; b++)
            if (symaddr_backend_built((symaddr_backend_kind_t)b))
                printf(" %s", symaddr_backend_name((symaddr_backend_kind_t)b));
        printf("   (backends)\n");
        printf("backend       %s\n", symaddr_backend_name(symaddr_backend(ctx)));
        printf("ranks         %d, %d per node group, rank stride %d\n", size, loc->node_size,
               loc->rank_stride);
        printf("devices      ");
        for (int r = 0; r < size; r++)
            printf(" %d", loc->device[r]);
        printf("   (per rank; -1 = host memory)\n");
        for (int k = 0; k < NPROV; k++)
            printf("provider %-4s %s\n", symaddr_provider_name(kinds[k]), prov_line[k]);
        printf("locality (S self, G same GPU, N same node, F fabric, R remote; row = rank)\n");
        for (int r = 0; r < size; r++)
            printf("  rank %3d   %s\n", r, all + (size_t)r * ((size_t)size + 1));
    }
    free(row);
    free(all);
    symaddr_finalize(&ctx);
    MPI_Finalize();
    return 0;
}
