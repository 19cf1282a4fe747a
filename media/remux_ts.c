/*
 * remux_ts.c - a chunk output's exact source timestamps, as small text
 * beside it (remux_ts.h):
 *
 *     vrseg-ts 1
 *     matrix 0 65536 0 -65536 0 0 0 0 1073741824     (only with a rotation)
 *     streams 2
 *     stream 0 tb 1/15360 n 3
 *     512
 *     1024
 *     ...
 *     stream 1 tb 1/48000 n 2
 *     0 0 1024
 *     1024 1024 1024
 *
 * "-" stands for no timestamp. Written with one atomic write, read with
 * every number and count checked.
 */
#include "remux_ts.h"

#include "storage.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TS_MAGIC "vrseg-ts 1"
/* A line is at most three 20-digit numbers; the file at most this. */
#define TS_FILE_MAX (256u << 20)

/* ---- writing ---- */

struct tsbuf {
    char *p;
    size_t n, cap;
    int nomem;
};

static void tb_add(struct tsbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_add(struct tsbuf *b, const char *fmt, ...)
{
    if (b->nomem)
        return;
    if (b->cap - b->n < 96) {
        size_t cap = b->cap ? 2 * b->cap : 4096;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->nomem = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (w > 0 && (size_t)w < b->cap - b->n)
        b->n += (size_t)w;
}

static void tb_ts(struct tsbuf *b, int64_t v, const char *sep)
{
    if (v == INT64_MIN)
        tb_add(b, "-%s", sep);
    else
        tb_add(b, "%" PRId64 "%s", v, sep);
}

int remux_ts_write(const char *path, const struct remux_ts *t, vr_err *err)
{
    struct tsbuf b = { 0 };
    tb_add(&b, TS_MAGIC "\n");
    if (t->has_matrix)
        tb_add(&b, "matrix %d %d %d %d %d %d %d %d %d\n", t->matrix[0], t->matrix[1],
               t->matrix[2], t->matrix[3], t->matrix[4], t->matrix[5], t->matrix[6],
               t->matrix[7], t->matrix[8]);
    tb_add(&b, "streams %d\n", t->nstreams);
    for (int k = 0; k < t->nstreams; k++) {
        const struct remux_ts_stream *s = &t->s[k];
        tb_add(&b, "stream %d tb %d/%d n %lld\n", k, s->tb_num, s->tb_den, s->n);
        for (long long i = 0; i < s->n; i++) {
            if (k == 0) {
                tb_ts(&b, s->pts[i], "\n");
                continue;
            }
            tb_ts(&b, s->pts[i], " ");
            tb_ts(&b, s->dts[i], " ");
            tb_add(&b, "%" PRId64 "\n", s->dur[i]);
        }
    }
    int rc = b.nomem ? vr_err_set(err, VR_ENOMEM, "out of memory")
                     : storage_write_atomic(path, b.p, b.n, err);
    free(b.p);
    return rc;
}

int remux_ts_name(const char *out, char *buf, size_t n, vr_err *err)
{
    int w = snprintf(buf, n, "%s.ts", out);
    if (w < 0 || (size_t)w >= n)
        return vr_err_set(err, VR_EINVAL, "%s: path too long for its sidecar", out);
    return 0;
}

void remux_ts_release(struct remux_ts *t)
{
    if (!t)
        return;
    for (int k = 0; t->s && k < t->nstreams; k++) {
        free(t->s[k].pts);
        free(t->s[k].dts);
        free(t->s[k].dur);
    }
    free(t->s);
    memset(t, 0, sizeof *t);
}

/* ---- reading ---- */

struct tsread {
    const char *path;
    char *p, *end;
    int line;
};

/* The next line (NUL-terminated in place), or NULL at the end. */
static char *tr_line(struct tsread *r)
{
    if (r->p >= r->end)
        return NULL;
    char *l = r->p, *nl = memchr(l, '\n', (size_t)(r->end - l));
    if (!nl)
        nl = r->end;
    *nl = '\0';
    r->p = nl + 1;
    r->line++;
    return l;
}

/* One number ("-" for none where allowed) from *s, advancing past it. */
static int tr_num(char **s, int64_t *v, int none_ok)
{
    while (**s == ' ')
        (*s)++;
    if (none_ok && **s == '-' && ((*s)[1] == ' ' || !(*s)[1])) {
        *v = INT64_MIN;
        (*s)++;
        return 0;
    }
    char *e;
    errno = 0;
    long long x = strtoll(*s, &e, 10);
    if (e == *s || errno || (*e && *e != ' ') || x == LLONG_MIN)
        return -1;
    *v = x;
    *s = e;
    return 0;
}

static int tr_bad(const struct tsread *r, const char *what, vr_err *err)
{
    return vr_err_set(err, VR_EFORMAT, "%s: line %d: %s", r->path, r->line, what);
}

static int tr_stream(struct tsread *r, int k, struct remux_ts_stream *s, vr_err *err)
{
    char *l = tr_line(r);
    int kk;
    if (!l || sscanf(l, "stream %d tb %d/%d n %lld", &kk, &s->tb_num, &s->tb_den, &s->n) != 4 ||
        kk != k || s->tb_num < 1 || s->tb_den < 1 || s->n < 0 || s->n > REMUX_TS_MAX_PACKETS)
        return tr_bad(r, "expected 'stream K tb NUM/DEN n COUNT' within limits", err);
    size_t bytes = (size_t)(s->n ? s->n : 1) * sizeof(int64_t);
    if (!(s->pts = malloc(bytes)) || (k && (!(s->dts = malloc(bytes)) || !(s->dur = malloc(bytes)))))
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    for (long long i = 0; i < s->n; i++) {
        char *p = tr_line(r);
        if (!p)
            return tr_bad(r, "the file ends inside a stream", err);
        if (tr_num(&p, &s->pts[i], 1) < 0 ||
            (k && (tr_num(&p, &s->dts[i], 1) < 0 || tr_num(&p, &s->dur[i], 0) < 0)) || *p)
            return tr_bad(r, k ? "expected 'PTS DTS DURATION'" : "expected a PTS", err);
        if (k == 0 && (s->pts[i] == INT64_MIN || (i && s->pts[i] <= s->pts[i - 1])))
            return tr_bad(r, "frame times must increase", err);
    }
    return 0;
}

int remux_ts_read(const char *path, struct remux_ts *t, vr_err *err)
{
    memset(t, 0, sizeof *t);
    char *text;
    size_t len;
    int rc = storage_read_file(path, TS_FILE_MAX, &text, &len, err);
    if (rc < 0)
        return rc;
    struct tsread r = { .path = path, .p = text, .end = text + len };
    char *l = tr_line(&r);
    int n = -1;
    if (!l || strcmp(l, TS_MAGIC))
        rc = tr_bad(&r, "not a vrseg timestamp file", err);
    else if ((l = tr_line(&r)) && !strncmp(l, "matrix ", 7)) {
        int32_t *m = t->matrix;
        t->has_matrix = 1;
        if (sscanf(l, "matrix %d %d %d %d %d %d %d %d %d", &m[0], &m[1], &m[2], &m[3], &m[4],
                   &m[5], &m[6], &m[7], &m[8]) != 9)
            rc = tr_bad(&r, "expected 'matrix' and nine integers", err);
        l = tr_line(&r);
    }
    if (rc < 0)
        ;
    else if (!l || sscanf(l, "streams %d", &n) != 1 || n < 1 ||
             n > REMUX_TS_MAX_STREAMS)
        rc = tr_bad(&r, "expected 'streams N' (1..64)", err);
    else if (!(t->s = calloc((size_t)n, sizeof *t->s)))
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
    else
        t->nstreams = n;
    for (int k = 0; rc == 0 && k < n; k++)
        rc = tr_stream(&r, k, &t->s[k], err);
    if (rc == 0 && tr_line(&r) && r.p <= r.end)
        rc = tr_bad(&r, "text after the last stream", err);
    free(text);
    if (rc < 0)
        remux_ts_release(t);
    return rc;
}

int remux_ts_streams_check(const char *path, int streams, vr_err *err)
{
    if (streams <= REMUX_TS_MAX_STREAMS)
        return 0;
    return vr_err_set(err, VR_ENOTSUP, "%s has %d streams; a fleet chunk carries at most %d: "
                      "keep fewer (ffmpeg -map), or run vr-worker process on it", path, streams,
                      REMUX_TS_MAX_STREAMS);
}
