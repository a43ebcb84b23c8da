/* SPDX-License-Identifier: MIT */
/* The one logger (log.h). */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const char *const level_names[] = {"WARN", "INFO", "TRACE"};
static const char *const subsys_names[] = {"INIT", "BOOT", "ALLOC", "COLL", "RMA", "ENV"};

int symaddr_log_parse_level(const char *text, int *level_p)
{
    for (int k = 0; k < 3; k++)
        if (!strcasecmp(text, level_names[k]))
            return *level_p = k, 1;
    return 0;
}

/* A comma list of subsystem names; a leading ^ takes every subsystem but those. */
int symaddr_log_parse_subsys(const char *text, unsigned *mask_p)
{
    int negate = *text == '^';
    unsigned mask = 0;
    const char *p = text + negate;
    while (*p) {
        size_t n = strcspn(p, ",");
        unsigned bit = 0;
        for (unsigned k = 0; k < 6; k++)
            if (n == strlen(subsys_names[k]) && !strncasecmp(p, subsys_names[k], n))
                bit = 1u << k;
        if (n == 3 && !strncasecmp(p, "ALL", 3))
            bit = SYMADDR_SUB_ALL;
        if (!bit)
            return 0;
        mask |= bit;
        p += n + (p[n] == ',');
    }
    *mask_p = negate ? SYMADDR_SUB_ALL & ~mask : mask;
    return 1;
}

int symaddr_log_on(const symaddr_config_t *cfg, int level, unsigned subsys)
{
    if (level == SYMADDR_LOG_WARN)
        return 1;
    return cfg && cfg->size == sizeof(*cfg) && level <= cfg->debug_level &&
           (cfg->debug_subsys & subsys) != 0;
}

/* $SYMADDR_DEBUG_FILE, opened once per process with %h (host) and %p (pid) filled in. */
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_file;
static char log_file_pattern[256];

static FILE *open_file(const char *pattern)
{
    if (log_file && !strcmp(pattern, log_file_pattern))
        return log_file;
    char path[512], host[64] = "";
    size_t n = 0;
    gethostname(host, sizeof(host) - 1);
    for (const char *p = pattern; *p && n + 64 < sizeof(path); p++) {
        if (p[0] == '%' && p[1] == 'h')
            n += (size_t)snprintf(path + n, sizeof(path) - n, "%s", host), p++;
        else if (p[0] == '%' && p[1] == 'p')
            n += (size_t)snprintf(path + n, sizeof(path) - n, "%d", (int)getpid()), p++;
        else
            path[n++] = *p;
    }
    path[n] = 0;
    FILE *f = fopen(path, "a");
    if (!f)
        return NULL; /* the line goes to stderr instead */
    if (log_file)
        fclose(log_file);
    setvbuf(f, NULL, _IOLBF, 0);
    log_file = f;
    snprintf(log_file_pattern, sizeof(log_file_pattern), "%s", pattern);
    return f;
}

void symaddr_log(const symaddr_config_t *cfg, int rank, int node_rank, int level, unsigned subsys,
                 const char *fmt, ...)
{
    if (!symaddr_log_on(cfg, level, subsys))
        return;
    char line[1024], host[64] = "";
    gethostname(host, sizeof(host) - 1);
    char *dot = strchr(host, '.');
    if (dot)
        *dot = 0;
    int n = snprintf(line, sizeof(line), "%s:%d:%d [%d] symaddr %s ", host, (int)getpid(), rank,
                     node_rank, level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    int ok = cfg && cfg->size == sizeof(*cfg);
    if (ok && cfg->logger) {
        cfg->logger(cfg->logger_cookie, line);
        return;
    }
    pthread_mutex_lock(&file_lock);
    FILE *f = ok && cfg->debug_file && *cfg->debug_file ? open_file(cfg->debug_file) : NULL;
    fprintf(f ? f : stderr, "%s\n", line);
    pthread_mutex_unlock(&file_lock);
}
