/*
 * metrics.c - log-bucketed latency histograms and the per-run metrics record,
 * with exact merge and a JSON round trip (see metrics.h).
 */
#include "metrics.h"

#include "storage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- histogram ---- */

void hist_reset(struct hist *h)
{
    memset(h, 0, sizeof *h);
}

static int bucket_of(double us)
{
    if (!(us > HIST_LO_US))  /* also catches NaN */
        return 0;
    int i = (int)floor(log(us / HIST_LO_US) / log(HIST_GROWTH));
    if (i < 0)
        return 0;
    return i >= HIST_BUCKETS ? HIST_BUCKETS - 1 : i;
}

void hist_record(struct hist *h, double us)
{
    if (!(us >= 0))
        us = 0;
    if (us > 1e12)  /* keep sum_ns far from overflow: 11 days per value */
        us = 1e12;
    if (h->count == 0 || us < h->min_us)
        h->min_us = us;
    if (h->count == 0 || us > h->max_us)
        h->max_us = us;
    h->count++;
    h->sum_ns += (uint64_t)llround(us * 1000.0);
    h->b[bucket_of(us)]++;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
    if (src->count == 0)
        return;
    if (dst->count == 0 || src->min_us < dst->min_us)
        dst->min_us = src->min_us;
    if (dst->count == 0 || src->max_us > dst->max_us)
        dst->max_us = src->max_us;
    dst->count += src->count;
    dst->sum_ns += src->sum_ns;
    for (int i = 0; i < HIST_BUCKETS; i++)
        dst->b[i] += src->b[i];
}

double hist_percentile(const struct hist *h, double p)
{
    if (h->count == 0)
        return 0;
    if (p < 0)
        p = 0;
    if (p > 100)
        p = 100;
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->count);
    if (rank < 1)
        rank = 1;
    /* the extremes are known exactly */
    if (rank >= h->count)
        return h->max_us;
    if (rank == 1)
        return h->min_us;
    uint64_t seen = 0;
    int i = 0;
    for (; i < HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank)
            break;
    }
    if (i == HIST_BUCKETS)
        i = HIST_BUCKETS - 1;
    double v = HIST_LO_US * pow(HIST_GROWTH, i + 0.5);
    if (v < h->min_us)
        v = h->min_us;
    if (v > h->max_us)
        v = h->max_us;
    return v;
}

double hist_mean(const struct hist *h)
{
    return h->count ? (double)h->sum_ns / 1000.0 / (double)h->count : 0;
}

json_t *hist_to_json(const struct hist *h)
{
    json_t *bk = json_array();
    if (!bk)
        return NULL;
    for (int i = 0; i < HIST_BUCKETS; i++) {
        if (!h->b[i])
            continue;
        json_t *pair = json_pack("[iI]", i, (json_int_t)h->b[i]);
        if (!pair || json_array_append_new(bk, pair) < 0) {
            json_decref(bk);
            return NULL;
        }
    }
    /* "o" steals bk, also on failure */
    return json_pack("{sI sI sf sf sf sf sf sf so}",
                     "n", (json_int_t)h->count, "sum_ns", (json_int_t)h->sum_ns,
                     "min_us", h->min_us, "max_us", h->max_us, "mean_us", hist_mean(h),
                     "p50_us", hist_percentile(h, 50), "p95_us", hist_percentile(h, 95),
                     "p99_us", hist_percentile(h, 99), "buckets", bk);
}

static int get_u64(const json_t *o, const char *key, uint64_t *v, const char *what,
                   vr_err *err)
{
    json_t *x = json_object_get(o, key);
    if (!json_is_integer(x) || json_integer_value(x) < 0)
        return vr_err_set(err, VR_EFORMAT, "metrics: %s: \"%s\" must be a non-negative integer",
                          what, key);
    *v = (uint64_t)json_integer_value(x);
    return 0;
}

static int get_num(const json_t *o, const char *key, double *v, const char *what, vr_err *err)
{
    json_t *x = json_object_get(o, key);
    if (!json_is_number(x) || !(json_number_value(x) >= 0) || !isfinite(json_number_value(x)))
        return vr_err_set(err, VR_EFORMAT, "metrics: %s: \"%s\" must be a non-negative number",
                          what, key);
    *v = json_number_value(x);
    return 0;
}

int hist_from_json(struct hist *h, const json_t *j, const char *what, vr_err *err)
{
    hist_reset(h);
    if (!json_is_object(j))
        return vr_err_set(err, VR_EFORMAT, "metrics: %s: not an object", what);
    int rc;
    if ((rc = get_u64(j, "n", &h->count, what, err)) < 0 ||
        (rc = get_u64(j, "sum_ns", &h->sum_ns, what, err)) < 0 ||
        (rc = get_num(j, "min_us", &h->min_us, what, err)) < 0 ||
        (rc = get_num(j, "max_us", &h->max_us, what, err)) < 0)
        goto fail;
    json_t *bk = json_object_get(j, "buckets");
    if (!json_is_array(bk) || json_array_size(bk) > HIST_BUCKETS) {
        rc = vr_err_set(err, VR_EFORMAT, "metrics: %s: \"buckets\" must be an array of at most %d pairs",
                        what, HIST_BUCKETS);
        goto fail;
    }
    uint64_t total = 0;
    size_t k;
    json_t *pair;
    json_array_foreach(bk, k, pair) {
        json_t *ji = json_array_get(pair, 0), *jc = json_array_get(pair, 1);
        if (!json_is_array(pair) || json_array_size(pair) != 2 || !json_is_integer(ji) ||
            !json_is_integer(jc) || json_integer_value(ji) < 0 ||
            json_integer_value(ji) >= HIST_BUCKETS || json_integer_value(jc) < 0) {
            rc = vr_err_set(err, VR_EFORMAT,
                            "metrics: %s: bucket entry %zu must be [index 0..%d, count >= 0]",
                            what, k, HIST_BUCKETS - 1);
            goto fail;
        }
        uint64_t c = (uint64_t)json_integer_value(jc);
        h->b[json_integer_value(ji)] += c;
        total += c;
    }
    if (total != h->count || (h->count && h->min_us > h->max_us)) {
        rc = vr_err_set(err, VR_EFORMAT,
                        "metrics: %s: bucket counts add up to %llu, \"n\" says %llu (or min > max)",
                        what, (unsigned long long)total, (unsigned long long)h->count);
        goto fail;
    }
    return 0;
fail:
    hist_reset(h);
    return rc;
}

/* ---- metrics ---- */

static const char *const stage_names[MET_NSTAGES] = {
    "decode", "preprocess", "h2d", "inference", "d2h", "postprocess", "encode", "end_to_end",
};

const char *metrics_stage_name(int stage)
{
    return stage >= 0 && stage < MET_NSTAGES ? stage_names[stage] : NULL;
}

void metrics_reset(struct metrics *m)
{
    memset(m, 0, sizeof *m);
}

void metrics_merge(struct metrics *dst, const struct metrics *src)
{
    for (int i = 0; i < MET_NSTAGES; i++)
        hist_merge(&dst->stage[i], &src->stage[i]);
    dst->frames += src->frames;
    dst->bytes_in += src->bytes_in;
    dst->bytes_out += src->bytes_out;
    dst->wall_s += src->wall_s;
    if (src->gpu_mem_peak > dst->gpu_mem_peak)
        dst->gpu_mem_peak = src->gpu_mem_peak;
    dst->gpu_util_sum += src->gpu_util_sum;
    dst->gpu_util_samples += src->gpu_util_samples;
    dst->concealed += src->concealed;
}

double metrics_fps(const struct metrics *m)
{
    return m->wall_s > 0 ? (double)m->frames / m->wall_s : 0;
}

double metrics_gpu_util(const struct metrics *m)
{
    return m->gpu_util_samples ? m->gpu_util_sum / (double)m->gpu_util_samples : -1;
}

json_t *metrics_to_json(const struct metrics *m)
{
    json_t *stages = json_object();
    if (!stages)
        return NULL;
    for (int i = 0; i < MET_NSTAGES; i++) {
        json_t *h = hist_to_json(&m->stage[i]);
        if (!h || json_object_set_new(stages, stage_names[i], h) < 0) {
            json_decref(stages);
            return NULL;
        }
    }
    return json_pack("{si sI sI sI sf sf sI sf sI sf sI so}", "version", 1,
                     "frames", (json_int_t)m->frames, "bytes_in", (json_int_t)m->bytes_in,
                     "bytes_out", (json_int_t)m->bytes_out, "wall_s", m->wall_s,
                     "fps", metrics_fps(m), "gpu_mem_peak", (json_int_t)m->gpu_mem_peak,
                     "gpu_util_sum", m->gpu_util_sum,
                     "gpu_util_samples", (json_int_t)m->gpu_util_samples,
                     "gpu_util", metrics_gpu_util(m), "concealed", (json_int_t)m->concealed,
                     "stages", stages);
}

int metrics_from_json(struct metrics *m, const json_t *j, vr_err *err)
{
    metrics_reset(m);
    int rc;
    if (!json_is_object(j))
        return vr_err_set(err, VR_EFORMAT, "metrics: not a JSON object");
    json_t *ver = json_object_get(j, "version");
    if (!json_is_integer(ver) || json_integer_value(ver) != 1)
        return vr_err_set(err, VR_EFORMAT, "metrics: \"version\" must be 1");
    if ((rc = get_u64(j, "frames", &m->frames, "metrics", err)) < 0 ||
        (rc = get_u64(j, "bytes_in", &m->bytes_in, "metrics", err)) < 0 ||
        (rc = get_u64(j, "bytes_out", &m->bytes_out, "metrics", err)) < 0 ||
        (rc = get_num(j, "wall_s", &m->wall_s, "metrics", err)) < 0 ||
        (rc = get_u64(j, "gpu_mem_peak", &m->gpu_mem_peak, "metrics", err)) < 0 ||
        (rc = get_num(j, "gpu_util_sum", &m->gpu_util_sum, "metrics", err)) < 0 ||
        (rc = get_u64(j, "gpu_util_samples", &m->gpu_util_samples, "metrics", err)) < 0 ||
        (json_object_get(j, "concealed") && /* a worker older than the field has none */
         (rc = get_u64(j, "concealed", &m->concealed, "metrics", err)) < 0))
        goto fail;
    json_t *stages = json_object_get(j, "stages");
    if (!json_is_object(stages)) {
        rc = vr_err_set(err, VR_EFORMAT, "metrics: \"stages\" must be an object");
        goto fail;
    }
    for (int i = 0; i < MET_NSTAGES; i++) {
        json_t *h = json_object_get(stages, stage_names[i]);
        if (!h) {
            rc = vr_err_set(err, VR_EFORMAT, "metrics: stage \"%s\" missing", stage_names[i]);
            goto fail;
        }
        if ((rc = hist_from_json(&m->stage[i], h, stage_names[i], err)) < 0)
            goto fail;
    }
    return 0;
fail:
    metrics_reset(m);
    return rc;
}

char *metrics_to_string(const struct metrics *m)
{
    json_t *j = metrics_to_json(m);
    if (!j)
        return NULL;
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

int metrics_from_string(struct metrics *m, const char *s, size_t len, vr_err *err)
{
    metrics_reset(m);
    if (len > METRICS_MAX_JSON)
        return vr_err_set(err, VR_EFORMAT, "metrics: JSON of %zu bytes exceeds the %d-byte limit",
                          len, METRICS_MAX_JSON);
    json_error_t je;
    json_t *j = json_loadb(s, len, 0, &je);
    if (!j)
        return vr_err_set(err, VR_EFORMAT, "metrics: bad JSON at line %d: %s", je.line, je.text);
    int rc = metrics_from_json(m, j, err);
    json_decref(j);
    return rc;
}

int metrics_write_file(const struct metrics *m, const char *path, vr_err *err)
{
    json_t *j = metrics_to_json(m);
    if (!j)
        return vr_err_set(err, VR_ENOMEM, "metrics: out of memory");
    char *text = json_dumps(j, JSON_INDENT(2));
    json_decref(j);
    if (!text)
        return vr_err_set(err, VR_ENOMEM, "metrics: out of memory");
    int rc = storage_write_atomic(path, text, strlen(text), err);
    free(text);
    return rc < 0 ? vr_err_prefix(err, "metrics") : 0;
}
