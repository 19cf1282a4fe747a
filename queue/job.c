/*
 * job.c - job specs, chunk tasks and split manifests as strict JSON (see
 * job.h). One field table per record type drives both directions, so a key
 * cannot be written under one name and read under another.
 */
#include "job.h"

#include "storage.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

/* ---- field tables ---- */

enum jf_type { JF_STR, JF_INT, JF_LL, JF_DBL };

struct jf {
    const char *key;
    enum jf_type type;
    size_t off, size;      /* offset in the struct; size of a string buffer */
    double lo, hi;         /* range for numbers */
    int required;          /* 1: must be present; JF_OMIT_EMPTY: a string left out
                            * of the JSON when "" (a key added later, so that a spec
                            * without it still reads in an older controller) */
};
#define JF_OMIT_EMPTY 2

#define S(T, f, req) { #f, JF_STR, offsetof(T, f), sizeof(((T *)0)->f), 0, 0, req }
#define N(T, f, ty, lo, hi, req) { #f, ty, offsetof(T, f), 0, lo, hi, req }

static const struct jf spec_fields[] = {
    S(struct job_spec, id, 1),
    S(struct job_spec, input, 1),
    S(struct job_spec, output, 1),
    S(struct job_spec, profile, 1),
    S(struct job_spec, output_kind, 1),
    N(struct job_spec, chunk_seconds, JF_DBL, 0, 3600, 1),
    N(struct job_spec, priority, JF_INT, -100, 100, 0),
    N(struct job_spec, max_attempts, JF_INT, 1, 100, 0),
    N(struct job_spec, created_ms, JF_LL, 0, 9e15, 0),
    S(struct job_spec, layout, 0),
    S(struct job_spec, config, 0),
    S(struct job_spec, notify, JF_OMIT_EMPTY),
    { 0 }
};

static const struct jf task_fields[] = {
    S(struct chunk_task, job, 1),
    N(struct chunk_task, idx, JF_INT, 0, JOB_MAX_CHUNKS - 1, 1),
    S(struct chunk_task, in, 1),
    S(struct chunk_task, out, 1),
    S(struct chunk_task, profile, 1),
    S(struct chunk_task, output_kind, 1),
    N(struct chunk_task, frames, JF_LL, 1, 1e9, 1),
    N(struct chunk_task, preroll_until, JF_LL, 0, 1e12, 0),
    N(struct chunk_task, warmup_from, JF_LL, -1, 1e12, 0),
    S(struct chunk_task, layout, 0),
    S(struct chunk_task, config, 0),
    { 0 }
};

static int jf_write(const struct jf *t, const void *obj, char **out, vr_err *err)
{
    json_t *o = json_object();
    if (!o)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    const char *base = obj;
    for (const struct jf *f = t; f->key; f++) {
        json_t *v = NULL;
        if (f->required == JF_OMIT_EMPTY && !base[f->off])
            continue;
        switch (f->type) {
        case JF_STR: v = json_string(base + f->off); break;
        case JF_INT: v = json_integer(*(const int *)(base + f->off)); break;
        case JF_LL:  v = json_integer(*(const long long *)(base + f->off)); break;
        case JF_DBL: v = json_real(*(const double *)(base + f->off)); break;
        }
        if (!v || json_object_set_new(o, f->key, v) < 0) {
            json_decref(o);
            return vr_err_set(err, VR_EINVAL, "cannot encode '%s' (not UTF-8?)", f->key);
        }
    }
    *out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return *out ? 0 : vr_err_set(err, VR_ENOMEM, "out of memory");
}

static int jf_parse(const struct jf *t, const char *what, const char *json, size_t len,
                    void *obj, vr_err *err)
{
    if (len > JOB_MAX_JSON)
        return vr_err_set(err, VR_EFORMAT, "%s: %zu bytes of JSON (limit %d)", what, len, JOB_MAX_JSON);
    json_error_t je;
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return vr_err_set(err, VR_EFORMAT, "%s: bad JSON at %d:%d: %s", what, je.line, je.column, je.text);
    int rc = 0;
    char *base = obj;
    if (!json_is_object(o)) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: not a JSON object", what);
        goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        const struct jf *f = t;
        while (f->key && strcmp(f->key, k) != 0)
            f++;
        if (!f->key) {
            rc = vr_err_set(err, VR_EFORMAT, "%s: unknown key '%.40s'", what, k);
            goto out;
        }
    }
    for (const struct jf *f = t; f->key; f++) {
        v = json_object_get(o, f->key);
        if (!v) {
            if (f->required == 1) {
                rc = vr_err_set(err, VR_EFORMAT, "%s: missing '%s'", what, f->key);
                goto out;
            }
            continue;
        }
        if (f->type == JF_STR) {
            if (!json_is_string(v)) {
                rc = vr_err_set(err, VR_EFORMAT, "%s: '%s' must be a string", what, f->key);
                goto out;
            }
            size_t l = json_string_length(v);
            if (l >= f->size || strlen(json_string_value(v)) != l) {
                rc = vr_err_set(err, VR_EFORMAT, "%s: '%s' longer than %zu bytes or has NUL",
                                what, f->key, f->size - 1);
                goto out;
            }
            memcpy(base + f->off, json_string_value(v), l + 1);
            continue;
        }
        if (f->type != JF_DBL && !json_is_integer(v)) {
            rc = vr_err_set(err, VR_EFORMAT, "%s: '%s' must be an integer", what, f->key);
            goto out;
        }
        if (!json_is_number(v)) {
            rc = vr_err_set(err, VR_EFORMAT, "%s: '%s' must be a number", what, f->key);
            goto out;
        }
        double d = json_number_value(v);
        if (!(d >= f->lo && d <= f->hi)) {
            rc = vr_err_set(err, VR_EFORMAT, "%s: '%s' = %g is outside %g..%g", what, f->key, d,
                            f->lo, f->hi);
            goto out;
        }
        if (f->type == JF_INT)
            *(int *)(base + f->off) = (int)json_integer_value(v);
        else if (f->type == JF_LL)
            *(long long *)(base + f->off) = (long long)json_integer_value(v);
        else
            *(double *)(base + f->off) = d;
    }
out:
    json_decref(o);
    return rc;
}

/* ---- specs and tasks ---- */

void job_spec_defaults(struct job_spec *j)
{
    memset(j, 0, sizeof *j);
    snprintf(j->profile, sizeof j->profile, "balanced");
    snprintf(j->output_kind, sizeof j->output_kind, "mask");
    snprintf(j->layout, sizeof j->layout, "auto");
    j->chunk_seconds = 0;
    j->max_attempts = 3;
}

double job_auto_chunk_seconds(double duration_s, int slots)
{
    if (!(duration_s > 0) || slots < 1)
        return JOB_CHUNK_SECONDS_DEFAULT;
    double waves = ceil(duration_s / (slots * (double)JOB_CHUNK_SECONDS_DEFAULT));
    double c = duration_s / (waves * slots);
    return c < JOB_CHUNK_SECONDS_MIN_AUTO ? JOB_CHUNK_SECONDS_MIN_AUTO : c;
}

void job_new_id(char *buf, size_t n)
{
    unsigned char r[4] = { 0 };
    if (getrandom(r, sizeof r, 0) != sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        memcpy(r, &ts.tv_nsec, sizeof r);
    }
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    snprintf(buf, n, "%04d%02d%02d-%02d%02d%02d-%02x%02x%02x%02x", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, r[0], r[1], r[2], r[3]);
}

int job_id_valid(const char *id)
{
    size_t n = 0;
    for (; id[n]; n++) {
        char c = id[n];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '-' || c == '_'))
            return 0;
    }
    return n > 0 && n < JOB_ID_MAX;
}

int job_output_kind_valid(const char *k)
{
    return strcmp(k, "mask") == 0 || strcmp(k, "alpha") == 0 ||
           strcmp(k, "alpha-packed") == 0 || strcmp(k, "greenscreen") == 0;
}

int job_layout_valid(const char *l, int allow_auto)
{
    return !strcmp(l, "mono") || !strcmp(l, "sbs") || !strcmp(l, "tb") ||
           (allow_auto && !strcmp(l, "auto"));
}

int job_state_ended(const char *s)
{
    return !strcmp(s, "done") || !strcmp(s, "failed") || !strcmp(s, "cancelled");
}

int job_notify_check(const char *url, vr_err *err)
{
    size_t skip = !strncasecmp(url, "http://", 7) ? 7 : !strncasecmp(url, "https://", 8) ? 8 : 0;
    if (!skip)
        return vr_err_set(err, VR_EINVAL, "not an http:// or https:// URL");
    size_t n = strlen(url);
    if (n >= JOB_NOTIFY_MAX)
        return vr_err_set(err, VR_EINVAL, "URL longer than %d bytes", JOB_NOTIFY_MAX - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)url[i] <= ' ' || (unsigned char)url[i] >= 0x7f)
            return vr_err_set(err, VR_EINVAL, "a space, control or non-ASCII byte at %zu "
                              "(write it %%XX-escaped)", i);
    if (!url[skip] || strchr("/?#", url[skip]))
        return vr_err_set(err, VR_EINVAL, "no host after the scheme");
    return 0;
}

int job_spec_to_json(const struct job_spec *j, char **out, vr_err *err)
{
    return jf_write(spec_fields, j, out, err);
}

int chunk_task_to_json(const struct chunk_task *t, char **out, vr_err *err)
{
    return jf_write(task_fields, t, out, err);
}

int job_spec_parse(const char *json, size_t len, struct job_spec *j, vr_err *err)
{
    job_spec_defaults(j);
    int rc = jf_parse(spec_fields, "job spec", json, len, j, err);
    if (rc == 0 && !job_id_valid(j->id))
        rc = vr_err_set(err, VR_EFORMAT, "job spec: bad id '%s'", j->id);
    if (rc == 0 && !job_output_kind_valid(j->output_kind))
        rc = vr_err_set(err, VR_EFORMAT, "job spec: output_kind '%s' is not mask|alpha|greenscreen",
                        j->output_kind);
    if (rc == 0 && (j->input[0] != '/' || j->output[0] != '/'))
        rc = vr_err_set(err, VR_EFORMAT, "job spec: input and output must be absolute paths");
    if (rc == 0 && !job_layout_valid(j->layout, 1))
        rc = vr_err_set(err, VR_EFORMAT, "job spec: layout '%s' is not auto|mono|sbs|tb", j->layout);
    if (rc == 0 && j->chunk_seconds > 0 && j->chunk_seconds < 0.2)
        rc = vr_err_set(err, VR_EFORMAT, "job spec: chunk_seconds %g is outside 0.2..3600 (0: "
                        "auto)", j->chunk_seconds);
    vr_err ne = { 0 };
    if (rc == 0 && j->notify[0] && job_notify_check(j->notify, &ne) < 0)
        rc = vr_err_set(err, VR_EFORMAT, "job spec: notify '%.80s': %s; refused", j->notify,
                        ne.msg);
    return rc;
}

int chunk_task_parse(const char *json, size_t len, struct chunk_task *t, vr_err *err)
{
    memset(t, 0, sizeof *t);
    t->warmup_from = -1;
    int rc = jf_parse(task_fields, "chunk task", json, len, t, err);
    if (rc == 0 && t->warmup_from < 0)
        t->warmup_from = t->preroll_until; /* no warm-up frames */
    if (rc == 0 && t->layout[0] && !job_layout_valid(t->layout, 0))
        rc = vr_err_set(err, VR_EFORMAT, "chunk task: layout '%s' is not mono|sbs|tb", t->layout);
    if (rc == 0 && !job_id_valid(t->job))
        rc = vr_err_set(err, VR_EFORMAT, "chunk task: bad job id");
    if (rc == 0 && !job_output_kind_valid(t->output_kind))
        rc = vr_err_set(err, VR_EFORMAT, "chunk task: bad output_kind '%s'", t->output_kind);
    return rc;
}

/* ---- manifest ---- */

/* An optional per-chunk array: written only when a value differs from
 * `none`; read back as `none` everywhere when absent. */
static int put_per_chunk(json_t *o, const char *key, const long long *v, int n, long long none)
{
    int any = 0;
    for (int i = 0; v && i < n; i++)
        any |= v[i] != none;
    if (!any)
        return 0;
    json_t *a = json_array();
    if (!a)
        return -1;
    for (int i = 0; i < n; i++)
        if (json_array_append_new(a, json_integer(v[i])) < 0) {
            json_decref(a);
            return -1;
        }
    return json_object_set_new(o, key, a);
}

static int get_per_chunk(json_t *o, const char *key, long long *v, int n, long long none,
                         long long lo, long long hi, const char *path, vr_err *err)
{
    json_t *a = json_object_get(o, key);
    for (int i = 0; i < n; i++)
        v[i] = none;
    if (!a)
        return 0;
    if (!json_is_array(a) || json_array_size(a) != (size_t)n)
        return vr_err_set(err, VR_EFORMAT, "%s: '%s' needs one value per chunk", path, key);
    for (int i = 0; i < n; i++) {
        json_t *x = json_array_get(a, (size_t)i);
        if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi)
            return vr_err_set(err, VR_EFORMAT, "%s: chunk %d has a bad %s", path, i, key);
        v[i] = json_integer_value(x);
    }
    return 0;
}

int job_manifest_write(const char *path, const struct job_manifest *m, vr_err *err)
{
    json_t *o = json_object(), *a = json_array();
    if (!o || !a)
        goto nomem;
    for (int i = 0; i < m->nchunks; i++)
        if (json_array_append_new(a, json_integer(m->chunk_frames[i])) < 0)
            goto nomem;
    json_object_set_new(o, "chunks", a);
    a = NULL;
    if (put_per_chunk(o, "preroll_until", m->chunk_preroll, m->nchunks, 0) < 0 ||
        put_per_chunk(o, "warmup_from", m->chunk_warmup, m->nchunks, -1) < 0)
        goto nomem;
    json_object_set_new(o, "frames", json_integer(m->frames));
    json_object_set_new(o, "duration_s", json_real(m->duration_s));
    json_object_set_new(o, "split_s", json_real(m->split_s));
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    if (!s)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = storage_write_atomic(path, s, strlen(s), err);
    free(s);
    return rc;
nomem:
    json_decref(o);
    json_decref(a);
    return vr_err_set(err, VR_ENOMEM, "out of memory");
}

void job_manifest_release(struct job_manifest *m)
{
    if (!m)
        return;
    free(m->chunk_frames);
    free(m->chunk_preroll);
    free(m->chunk_warmup);
    memset(m, 0, sizeof *m);
}

int job_manifest_read(const char *path, struct job_manifest *m, vr_err *err)
{
    memset(m, 0, sizeof *m);
    char *text;
    size_t len;
    int rc = storage_read_file(path, JOB_MAX_MANIFEST, &text, &len, err);
    if (rc < 0)
        return rc;
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!o)
        return vr_err_set(err, VR_EFORMAT, "%s: bad JSON: %s", path, je.text);
    json_t *a = json_object_get(o, "chunks"), *f = json_object_get(o, "frames");
    if (!json_is_array(a) || !json_is_integer(f) || json_array_size(a) < 1 ||
        json_array_size(a) > JOB_MAX_CHUNKS) {
        json_decref(o);
        return vr_err_set(err, VR_EFORMAT, "%s: needs 'chunks' (1..%d) and 'frames'", path,
                          JOB_MAX_CHUNKS);
    }
    m->nchunks = (int)json_array_size(a);
    m->frames = json_integer_value(f);
    m->duration_s = json_number_value(json_object_get(o, "duration_s"));
    m->split_s = json_number_value(json_object_get(o, "split_s"));
    m->chunk_frames = calloc((size_t)m->nchunks, sizeof *m->chunk_frames);
    m->chunk_preroll = calloc((size_t)m->nchunks, sizeof *m->chunk_preroll);
    m->chunk_warmup = calloc((size_t)m->nchunks, sizeof *m->chunk_warmup);
    if (!m->chunk_frames || !m->chunk_preroll || !m->chunk_warmup) {
        job_manifest_release(m);
        json_decref(o);
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    }
    long long sum = 0;
    for (int i = 0; i < m->nchunks; i++) {
        json_t *v = json_array_get(a, (size_t)i);
        long long n = json_is_integer(v) ? json_integer_value(v) : -1;
        if (n < 1 || n > 1000000000LL) {
            rc = vr_err_set(err, VR_EFORMAT, "%s: chunk %d has a bad frame count", path, i);
            break;
        }
        m->chunk_frames[i] = n;
        sum += n;
    }
    if (rc == 0)
        rc = get_per_chunk(o, "preroll_until", m->chunk_preroll, m->nchunks, 0, 0,
                           1000000000000LL, path, err);
    if (rc == 0)
        rc = get_per_chunk(o, "warmup_from", m->chunk_warmup, m->nchunks, -1, -1,
                           1000000000000LL, path, err);
    if (rc == 0 && sum != m->frames)
        rc = vr_err_set(err, VR_EFORMAT, "%s: chunk frames add up to %lld, not %lld", path, sum,
                        m->frames);
    json_decref(o);
    if (rc < 0)
        job_manifest_release(m);
    return rc;
}
