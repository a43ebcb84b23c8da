/* SPDX-License-Identifier: MIT */
/* The tools' one JSON writer (symaddr-info, symaddr-bench): objects and arrays nested to
 * JSON_DEPTH, strings escaped as RFC 8259 asks. Inactive (every call a no-op) when f is NULL. */
#ifndef SYMADDR_TOOLS_JSON_H
#define SYMADDR_TOOLS_JSON_H

#include <stdio.h>

#define JSON_DEPTH 8

typedef struct json_out {
    FILE *f;
    int depth;
    int count[JSON_DEPTH]; /* values written at each level */
    int after_key;         /* a key was written: its value needs no comma */
    int rows;              /* symaddr-bench: rows of its table written so far */
} json_out_t;

static inline void json_init(json_out_t *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->count[0] = 0;
    j->after_key = 0;
    j->rows = 0;
}

/* The comma before a value or key at this level, unless it is a key's value. */
static inline void json_sep_(json_out_t *j)
{
    if (j->after_key)
        j->after_key = 0;
    else if (j->count[j->depth]++)
        fputs(", ", j->f);
}

static inline void json_string_(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* '{' or '['; newline: start the value on a line of its own (rows of a table). */
static inline void json_begin(json_out_t *j, char bracket, int newline)
{
    if (!j->f)
        return;
    json_sep_(j);
    if (newline)
        fputs("\n  ", j->f);
    fputc(bracket, j->f);
    if (j->depth + 1 < JSON_DEPTH)
        j->count[++j->depth] = 0;
}

static inline void json_end(json_out_t *j, char bracket)
{
    if (!j->f)
        return;
    if (j->depth > 0)
        j->depth--;
    fputc(bracket, j->f);
}

static inline void json_key(json_out_t *j, const char *key)
{
    if (!j->f)
        return;
    json_sep_(j);
    json_string_(j->f, key);
    fputs(": ", j->f);
    j->after_key = 1;
}

static inline void json_string(json_out_t *j, const char *v)
{
    if (!j->f)
        return;
    json_sep_(j);
    json_string_(j->f, v);
}

/* A number with prec digits after the point (0 for integers). */
static inline void json_number(json_out_t *j, double v, int prec)
{
    if (!j->f)
        return;
    json_sep_(j);
    fprintf(j->f, "%.*f", prec, v);
}

static inline void json_bool(json_out_t *j, int v)
{
    if (!j->f)
        return;
    json_sep_(j);
    fputs(v ? "true" : "false", j->f);
}

static inline void json_null(json_out_t *j)
{
    if (!j->f)
        return;
    json_sep_(j);
    fputs("null", j->f);
}

/* key: value pairs */
static inline void json_str(json_out_t *j, const char *key, const char *v)
{
    json_key(j, key);
    json_string(j, v);
}

static inline void json_num(json_out_t *j, const char *key, double v, int prec)
{
    json_key(j, key);
    json_number(j, v, prec);
}

#endif
