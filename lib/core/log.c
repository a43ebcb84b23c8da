/* SPDX-License-Identifier: MIT */
/* The one logger (log.h). */
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
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

/* $SYMADDR_DEBUG_FILE, opened once per process with %h (host) and %p (pid) filled in: only a
 * regular file, never through a symbolic link, never waiting (a FIFO planted at the name would
 * hold the job forever), created 0600. A file that cannot be used is said once on stderr, and
 * the lines go there. */
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_file;
static char log_file_pattern[SYMADDR_LOG_PATTERN_MAX + 1],
    refused_pattern[SYMADDR_LOG_PATTERN_MAX + 1];

static FILE *refuse(const char *pattern, const char *path, const char *why)
{
    if (strcmp(pattern, refused_pattern) != 0) {
        fprintf(stderr,
                "symaddr: SYMADDR_DEBUG_FILE '%s' (%s) cannot be used: %s; its lines go "
                "to stderr\n",
                pattern, path, why);
        snprintf(refused_pattern, sizeof(refused_pattern), "%s", pattern);
    }
    return NULL;
}

static FILE *open_file(const char *pattern)
{
    if (log_file && !strcmp(pattern, log_file_pattern))
        return log_file;
    if (!strcmp(pattern, refused_pattern))
        return NULL;
    char path[4096], host[64] = "";
    size_t n = 0;
    if (strlen(pattern) > SYMADDR_LOG_PATTERN_MAX)
        return refuse(pattern, pattern, "the pattern is longer than 255 characters");
    gethostname(host, sizeof(host) - 1);
    for (const char *p = pattern; *p; p++) {
        if (n + sizeof(host) + 1 >= sizeof(path))
            return refuse(pattern, pattern, "its name is longer than 4000 characters");
        if (p[0] == '%' && p[1] == 'h')
            n += (size_t)snprintf(path + n, sizeof(path) - n, "%s", host), p++;
        else if (p[0] == '%' && p[1] == 'p')
            n += (size_t)snprintf(path + n, sizeof(path) - n, "%d", (int)getpid()), p++;
        else
            path[n++] = *p;
    }
    path[n] = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0)
        return refuse(pattern, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return refuse(pattern, path, "it is not a regular file");
    }
    /* a file someone else planted (or may read) would leak or forge the job's lines */
    if (st.st_uid != geteuid()) {
        close(fd);
        return refuse(pattern, path, "another user owns it; remove it or name another file");
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        close(fd);
        return refuse(pattern, path,
                      "other users may read or write it; chmod 600 it or name another file");
    }
    fcntl(fd, F_SETFL, O_WRONLY | O_APPEND); /* writes may wait once it is the file we want */
    FILE *f = fdopen(fd, "a");
    if (!f) {
        close(fd);
        return refuse(pattern, path, strerror(errno));
    }
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
