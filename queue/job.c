/*
 * job.c - job specs, chunk tasks and split manifests as strict JSON (see
 * job.h). One field table per record type drives both directions, so a key
 * cannot be written under one name and read under another.
 */
#include "job.h"

#include "storage.h"
#include "url_root.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

/* ---- field tables ---- */

enum jf_type { JF_STR, JF_INT, JF_LL, JF_I64, JF_DBL };

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
    N(struct job_spec, chunk_wave, JF_INT, 0, JOB_WAVE_SLOTS_MAX, 0),
    N(struct job_spec, priority, JF_INT, -100, 100, 0),
    N(struct job_spec, max_attempts, JF_INT, 1, 100, 0),
    N(struct job_spec, replace, JF_INT, 0, 1, 0),
    N(struct job_spec, created_ms, JF_LL, 0, 9e15, 0),
    S(struct job_spec, layout, 0),
    S(struct job_spec, config, 0),
    S(struct job_spec, notify, JF_OMIT_EMPTY),
    S(struct job_spec, chunking, JF_OMIT_EMPTY),
    S(struct job_spec, on_decode_error, JF_OMIT_EMPTY),
    S(struct job_spec, alpha_area, JF_OMIT_EMPTY),
    { 0 }
};

static const struct jf task_fields[] = {
    S(struct chunk_task, job, 1),
    N(struct chunk_task, idx, JF_INT, 0, JOB_MAX_CHUNKS - 1, 1),
    S(struct chunk_task, in, 0),
    S(struct chunk_task, out, 1),
    S(struct chunk_task, profile, 1),
    S(struct chunk_task, output_kind, 1),
    N(struct chunk_task, frames, JF_LL, -1, 1e9, 1),
    N(struct chunk_task, preroll_until, JF_LL, 0, 1e12, 0),
    N(struct chunk_task, warmup_from, JF_LL, -1, 1e12, 0),
    S(struct chunk_task, layout, 0),
    S(struct chunk_task, config, 0),
    S(struct chunk_task, on_decode_error, JF_OMIT_EMPTY),
    S(struct chunk_task, alpha_area, JF_OMIT_EMPTY),
    { 0 }
};

/* A range's numbers span int64: LLONG_MIN / LLONG_MAX say "none" and
 * "open", and timestamps may be negative (an edit list). */
#define TS_LO -9.3e18
#define TS_HI 9.3e18
/* The "range" object of a task: its keys are flat (first_pts, ...), the
 * numbers those of task.range (common/chunk_range.h), its source task.source. */
#define RS(k, f) { k, JF_STR, offsetof(struct chunk_task, f), \
                   sizeof(((struct chunk_task *)0)->f), 0, 0, 1 }
#define RN(k, f, ty, lo, hi) { k, ty, offsetof(struct chunk_task, range.f), 0, lo, hi, 1 }
static const struct jf range_fields[] = {
    RS("source", source),
    RS("fingerprint", range.fingerprint),
    RS("demuxer", range.demuxer),
    RN("seek", seek, JF_I64, TS_LO, TS_HI),
    RN("first_pts", first.pts, JF_I64, TS_LO, TS_HI),
    RN("first_dts", first.dts, JF_I64, TS_LO, TS_HI),
    RN("start_pts", start.pts, JF_I64, TS_LO, TS_HI),
    RN("start_dts", start.dts, JF_I64, TS_LO, TS_HI),
    RN("end_pts", end.pts, JF_I64, TS_LO, TS_HI),
    RN("end_dts", end.dts, JF_I64, TS_LO, TS_HI),
    RN("has_end", has_end, JF_INT, 0, 1),
    RN("preroll", preroll, JF_INT, 0, 1),
    RN("warmup", warmup, JF_INT, 0, 1000),
    RN("own_from", own_from, JF_I64, TS_LO, TS_HI),
    RN("own_to", own_to, JF_I64, TS_LO, TS_HI),
    RN("vs", vs, JF_INT, 0, 1023),
    RN("tb_num", tb_num, JF_INT, 1, 2147483647),
    RN("tb_den", tb_den, JF_INT, 1, 2147483647),
    { 0 }
};

/* The JSON object of obj by table t; NULL when out of memory or a string
 * is not UTF-8 (*bad names its key then). */
static json_t *jf_object(const struct jf *t, const void *obj, const char **bad)
{
    json_t *o = json_object();
    *bad = NULL;
    const char *base = obj;
    for (const struct jf *f = t; o && f->key; f++) {
        json_t *v = NULL;
        if (f->required == JF_OMIT_EMPTY && !base[f->off])
            continue;
        switch (f->type) {
        case JF_STR: v = json_string(base + f->off); break;
        case JF_INT: v = json_integer(*(const int *)(base + f->off)); break;
        case JF_LL:  v = json_integer(*(const long long *)(base + f->off)); break;
        case JF_I64: v = json_integer(*(const int64_t *)(base + f->off)); break;
        case JF_DBL: v = json_real(*(const double *)(base + f->off)); break;
        }
        if (!v || json_object_set_new(o, f->key, v) < 0) {
            *bad = f->key;
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

/* Compact JSON text of o (consumed); *out is malloc'd. */
static int jf_dump(json_t *o, const char *bad, char **out, vr_err *err)
{
    if (!o)
        return bad ? vr_err_set(err, VR_EINVAL, "cannot encode '%s' (not UTF-8?)", bad)
                   : vr_err_set(err, VR_ENOMEM, "out of memory");
    *out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return *out ? 0 : vr_err_set(err, VR_ENOMEM, "out of memory");
}

static int jf_write(const struct jf *t, const void *obj, char **out, vr_err *err)
{
    const char *bad;
    json_t *o = jf_object(t, obj, &bad);
    return jf_dump(o, bad, out, err);
}

/* Fills obj from the JSON object o by table t; `skip` names one key that
 * the caller reads itself (NULL: none). */
static int jf_fields(const struct jf *t, const char *what, json_t *o, const char *skip,
                     void *obj, vr_err *err)
{
    int rc = 0;
    char *base = obj;
    if (!json_is_object(o))
        return vr_err_set(err, VR_EFORMAT, "%s: not a JSON object", what);
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        const struct jf *f = t;
        while (f->key && strcmp(f->key, k) != 0)
            f++;
        if (!f->key && !(skip && !strcmp(k, skip))) {
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
        else if (f->type == JF_I64)
            *(int64_t *)(base + f->off) = (int64_t)json_integer_value(v);
        else
            *(double *)(base + f->off) = d;
    }
out:
    return rc;
}

/* Parses the text json into obj by table t (see jf_fields); *root gets
 * the parsed object when not NULL (the caller decrefs it), for `skip`. */
static int jf_parse_ex(const struct jf *t, const char *what, const char *json, size_t len,
                       const char *skip, void *obj, json_t **root, vr_err *err)
{
    if (len > JOB_MAX_JSON)
        return vr_err_set(err, VR_EFORMAT, "%s: %zu bytes of JSON (limit %d)", what, len, JOB_MAX_JSON);
    json_error_t je;
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return vr_err_set(err, VR_EFORMAT, "%s: bad JSON at %d:%d: %s", what, je.line, je.column, je.text);
    int rc = jf_fields(t, what, o, skip, obj, err);
    if (rc == 0 && root)
        *root = o;
    else
        json_decref(o);
    return rc;
}

static int jf_parse(const struct jf *t, const char *what, const char *json, size_t len,
                    void *obj, vr_err *err)
{
    return jf_parse_ex(t, what, json, len, NULL, obj, NULL, err);
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

int job_output_is_picture(const char *kind)
{
    return !strcmp(kind, "alpha") || !strcmp(kind, "alpha-packed") ||
           !strcmp(kind, "greenscreen");
}

double job_auto_chunk_seconds(double duration_s, int slots, int picture)
{
    if (!(duration_s > 0) || slots < 1)
        return JOB_CHUNK_SECONDS_DEFAULT;
    double waves = ceil(duration_s / (slots * (double)JOB_CHUNK_SECONDS_DEFAULT));
    if (picture && waves < JOB_PICTURE_CHUNKS_PER_SLOT)
        waves = JOB_PICTURE_CHUNKS_PER_SLOT;
    double c = duration_s / (waves * slots);
    double floor_s = picture ? JOB_CHUNK_SECONDS_MIN_PICTURE : JOB_CHUNK_SECONDS_MIN_AUTO;
    return c < floor_s ? floor_s : c;
}

double job_cut_piece_seconds(double chunk_s, double duration_s)
{
    double piece = chunk_s / 2 < JOB_CUT_PIECE_S ? chunk_s / 2 : JOB_CUT_PIECE_S;
    double need = duration_s > 0 && duration_s < 1e9 ? duration_s / JOB_CUT_PIECES_MAX : 0;
    if (need > piece)
        piece = need;
    return ceil(piece * 1000 - 1e-6) / 1000; /* whole ms, rounded up: never more pieces */
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
    return strcmp(k, "mask") == 0 || job_output_is_picture(k);
}

int job_layout_valid(const char *l, int allow_auto)
{
    return !strcmp(l, "mono") || !strcmp(l, "sbs") || !strcmp(l, "tb") ||
           (allow_auto && !strcmp(l, "auto"));
}

int job_chunking_valid(const char *c)
{
    return !strcmp(c, "auto") || !strcmp(c, "range") || !strcmp(c, "copy");
}

int job_decode_error_fail(const char *s)
{
    return !strcmp(s, "fail") ? 1 : !s[0] || !strcmp(s, "conceal") ? 0 : -1;
}

int job_state_ended(const char *s)
{
    return !strcmp(s, "done") || !strcmp(s, "failed") || !strcmp(s, "cancelled");
}

const char *const job_states[JOB_NSTATES] = { "queued", "splitting", "running", "stitching",
                                              "done", "failed", "cancelled" };

const char *job_state_known(const char *s)
{
    for (int i = 0; i < JOB_NSTATES; i++)
        if (!strcmp(s, job_states[i]))
            return job_states[i];
    return NULL;
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
    const char *bad;
    json_t *o = jf_object(task_fields, t, &bad);
    if (o && t->is_range) {
        json_t *r = jf_object(range_fields, t, &bad);
        if (!r || json_object_set_new(o, "range", r) < 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return jf_dump(o, bad, out, err);
}

/* A range as a worker may use it: a source it can name, numbers that fit. */
static int chunk_range_check(const struct chunk_task *t, vr_err *err)
{
    const struct chunk_range *r = &t->range;
    if (t->source[0] != '/' && !url_root_is_url(t->source))
        return vr_err_set(err, VR_EFORMAT, "chunk task: range source must be an absolute path "
                          "or a URL");
    int url = url_root_is_url(t->source); /* "http:<size>:<ETag>": printable, no space */
    for (const char *c = r->fingerprint; *c; c++)
        if (url ? (unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f
                : !strchr("0123456789:.", *c))
            return vr_err_set(err, VR_EFORMAT, "chunk task: bad range fingerprint");
    for (const char *c = r->demuxer; *c; c++)
        if (*c <= ' ' || *c >= 0x7f)
            return vr_err_set(err, VR_EFORMAT, "chunk task: bad range demuxer");
    return 0;
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
    if (rc == 0 && j->alpha_area[0] && strcmp(j->alpha_area, "corners"))
        rc = vr_err_set(err, VR_EFORMAT, "job spec: alpha_area '%s' is not corners", j->alpha_area);
    if (rc == 0 && ((j->input[0] != '/' && !url_root_is_url(j->input)) ||
                    (j->output[0] != '/' && !url_root_is_url(j->output))))
        rc = vr_err_set(err, VR_EFORMAT, "job spec: input and output (each an absolute path "
                        "or a URL) must be absolute");
    if (rc == 0 && !job_layout_valid(j->layout, 1))
        rc = vr_err_set(err, VR_EFORMAT, "job spec: layout '%s' is not auto|mono|sbs|tb", j->layout);
    if (rc == 0 && j->chunk_seconds > 0 && j->chunk_seconds < 0.2)
        rc = vr_err_set(err, VR_EFORMAT, "job spec: chunk_seconds %g is outside 0.2..3600 (0: "
                        "auto)", j->chunk_seconds);
    if (rc == 0 && j->chunking[0] && !job_chunking_valid(j->chunking))
        rc = vr_err_set(err, VR_EFORMAT, "job spec: chunking '%s' is not auto|range|copy",
                        j->chunking);
    if (rc == 0 && job_decode_error_fail(j->on_decode_error) < 0)
        rc = vr_err_set(err, VR_EFORMAT, "job spec: on_decode_error '%s' is not conceal|fail",
                        j->on_decode_error);
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
    json_t *root = NULL;
    int rc = jf_parse_ex(task_fields, "chunk task", json, len, "range", t, &root, err);
    json_t *r = root ? json_object_get(root, "range") : NULL;
    if (rc == 0 && r && (rc = jf_fields(range_fields, "chunk task range", r, NULL, t, err)) == 0)
        t->is_range = 1;
    json_decref(root);
    if (rc == 0 && t->is_range)
        rc = t->in[0] ? vr_err_set(err, VR_EFORMAT, "chunk task: a range has no input file")
                      : chunk_range_check(t, err);
    if (rc == 0 && !t->is_range && (!t->in[0] || t->frames < 1))
        rc = vr_err_set(err, VR_EFORMAT, "chunk task: needs 'in' and 'frames' >= 1, or a "
                        "'range'");
    if (rc == 0 && t->warmup_from < 0)
        t->warmup_from = t->preroll_until; /* no warm-up frames */
    if (rc == 0 && t->layout[0] && !job_layout_valid(t->layout, 0))
        rc = vr_err_set(err, VR_EFORMAT, "chunk task: layout '%s' is not mono|sbs|tb", t->layout);
    if (rc == 0 && job_decode_error_fail(t->on_decode_error) < 0)
        rc = vr_err_set(err, VR_EFORMAT, "chunk task: on_decode_error '%s' is not conceal|fail",
                        t->on_decode_error);
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
    if (m->ranges)
        json_object_set_new(o, "ranges", json_true());
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

int job_manifest_alloc(struct job_manifest *m, int nchunks, long long frames, double duration_s,
                       double split_s)
{
    m->nchunks = nchunks;
    m->frames = frames;
    m->duration_s = duration_s;
    m->split_s = split_s;
    m->chunk_frames = calloc((size_t)nchunks, sizeof *m->chunk_frames);
    m->chunk_preroll = calloc((size_t)nchunks, sizeof *m->chunk_preroll);
    m->chunk_warmup = calloc((size_t)nchunks, sizeof *m->chunk_warmup);
    if (!m->chunk_frames || !m->chunk_preroll || !m->chunk_warmup)
        return VR_ENOMEM;
    for (int i = 0; i < nchunks; i++)
        m->chunk_warmup[i] = -1;
    return 0;
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
    m->ranges = json_is_true(json_object_get(o, "ranges"));
    if (job_manifest_alloc(m, (int)json_array_size(a), json_integer_value(f),
                           json_number_value(json_object_get(o, "duration_s")),
                           json_number_value(json_object_get(o, "split_s"))) < 0) {
        job_manifest_release(m);
        json_decref(o);
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    }
    long long sum = 0;
    for (int i = 0; i < m->nchunks; i++) {
        json_t *v = json_array_get(a, (size_t)i);
        long long n = json_is_integer(v) ? json_integer_value(v) : -2;
        if (n > 1000000000LL || (n < 1 && !(m->ranges && n == -1))) {
            rc = vr_err_set(err, VR_EFORMAT, "%s: chunk %d has a bad frame count", path, i);
            break;
        }
        m->chunk_frames[i] = n;
        sum = n < 0 || sum < 0 ? -1 : sum + n; /* a range's count may be known only later */
    }
    if (rc == 0)
        rc = get_per_chunk(o, "preroll_until", m->chunk_preroll, m->nchunks, 0, 0,
                           1000000000000LL, path, err);
    if (rc == 0)
        rc = get_per_chunk(o, "warmup_from", m->chunk_warmup, m->nchunks, -1, -1,
                           1000000000000LL, path, err);
    if (rc == 0 && sum != m->frames && !(m->ranges && (sum < 0 || m->frames < 0)))
        rc = vr_err_set(err, VR_EFORMAT, "%s: chunk frames add up to %lld, not %lld", path, sum,
                        m->frames);
    json_decref(o);
    if (rc < 0)
        job_manifest_release(m);
    return rc;
}
