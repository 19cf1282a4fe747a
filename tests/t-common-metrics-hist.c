/*
 * t-common-metrics-hist.c - the latency histograms and the metrics record: bounded
 * percentile error, exact merge, JSON round trip, and refusal of bad JSON.
 */
#include "metrics.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* log-uniform values from 2 µs to 2 s, deterministic */
static double value(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    double u = (double)((*seed >> 8) & 0xffffff) / 16777216.0;
    return 2.0 * pow(1e6, u);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

Test(common_metrics_hist, percentiles_within_two_percent)
{
    enum { N = 20000 };
    static double v[N];
    struct hist h;
    hist_reset(&h);
    unsigned seed = 1;
    for (int i = 0; i < N; i++) {
        v[i] = value(&seed);
        hist_record(&h, v[i]);
    }
    qsort(v, N, sizeof v[0], cmp_d);
    static const double ps[] = { 1, 10, 50, 90, 95, 99, 99.9 };
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        double exact = v[(int)ceil(ps[i] / 100.0 * N) - 1];
        double got = hist_percentile(&h, ps[i]);
        cr_assert_leq(fabs(got - exact) / exact, 0.02, "p%g: %g vs exact %g", ps[i], got, exact);
    }
    cr_assert_leq(fabs(hist_percentile(&h, 0) - v[0]) / v[0], 0.02, "p0 is near the min");
    cr_assert_eq(hist_percentile(&h, 100), v[N - 1], "p100 is the exact max");
    cr_assert_eq(h.count, N);
    cr_assert(hist_percentile(&h, 50) <= hist_percentile(&h, 95) &&
              hist_percentile(&h, 95) <= hist_percentile(&h, 99));
}

Test(common_metrics_hist, merge_of_halves_equals_whole)
{
    struct hist all, a, b;
    hist_reset(&all);
    hist_reset(&a);
    hist_reset(&b);
    unsigned seed = 7;
    for (int i = 0; i < 5000; i++) {
        double x = value(&seed);
        hist_record(&all, x);
        hist_record(i % 3 ? &a : &b, x);
    }
    hist_merge(&a, &b);
    cr_assert_eq(memcmp(&a, &all, sizeof a), 0, "merged histogram differs from the whole");
    for (int p = 1; p <= 100; p++)
        cr_assert_eq(hist_percentile(&a, p), hist_percentile(&all, p));
}

Test(common_metrics_hist, out_of_range_values_are_clamped_not_lost)
{
    struct hist h;
    hist_reset(&h);
    hist_record(&h, 0.1);
    hist_record(&h, -5);
    hist_record(&h, 5e9); /* 5000 s, past the last bucket */
    cr_assert_eq(h.count, 3);
    cr_assert_eq(h.min_us, 0);
    cr_assert_eq(h.max_us, 5e9);
    cr_assert_eq(hist_percentile(&h, 100), 5e9);
    cr_assert_eq(h.b[0], 2);
    cr_assert_eq(h.b[HIST_BUCKETS - 1], 1);
}

static void fill(struct metrics *m, unsigned seed, int n)
{
    metrics_reset(m);
    for (int i = 0; i < n; i++)
        for (int s = 0; s < MET_NSTAGES; s++)
            hist_record(&m->stage[s], value(&seed));
    m->frames = (uint64_t)n;
    m->bytes_in = 123456789ull * (uint64_t)n;
    m->bytes_out = 1000;
    m->wall_s = 2.5;
    m->gpu_mem_peak = 3ull << 30;
    m->gpu_util_sum = 870;
    m->gpu_util_samples = 10;
}

Test(common_metrics_hist, json_round_trip_and_merge_across_chunks)
{
    struct metrics a, b, back, merged;
    fill(&a, 3, 300);
    fill(&b, 4, 200);
    b.gpu_mem_peak = 5ull << 30;
    char *s = metrics_to_string(&a);
    cr_assert_not_null(s);
    vr_err e = { 0 };
    cr_assert_eq(metrics_from_string(&back, s, strlen(s), &e), 0, "%s", e.msg);
    free(s);
    for (int i = 0; i < MET_NSTAGES; i++)
        cr_assert_eq(memcmp(&back.stage[i], &a.stage[i], sizeof a.stage[i]), 0, "stage %s",
                     metrics_stage_name(i));
    cr_assert_eq(back.frames, a.frames);
    cr_assert_eq(back.bytes_in, a.bytes_in);
    cr_assert_eq(back.gpu_mem_peak, a.gpu_mem_peak);
    cr_assert_float_eq(back.wall_s, a.wall_s, 1e-9);

    /* the controller's view: merge what came through JSON */
    merged = back;
    metrics_merge(&merged, &b);
    cr_assert_eq(merged.frames, 500);
    cr_assert_eq(merged.gpu_mem_peak, 5ull << 30, "peak memory is the max");
    cr_assert_float_eq(metrics_fps(&merged), 500 / 5.0, 1e-9);
    cr_assert_float_eq(metrics_gpu_util(&merged), 87.0, 1e-9);
    json_t *j = metrics_to_json(&merged);
    json_t *st = json_object_get(j, "stages");
    for (int i = 0; i < MET_NSTAGES; i++) {
        json_t *h = json_object_get(st, metrics_stage_name(i));
        cr_assert_not_null(h, "stage %s missing", metrics_stage_name(i));
        double p50 = json_real_value(json_object_get(h, "p50_us"));
        double p95 = json_real_value(json_object_get(h, "p95_us"));
        double p99 = json_real_value(json_object_get(h, "p99_us"));
        cr_assert(p50 > 0 && p50 <= p95 && p95 <= p99, "%s: %g %g %g", metrics_stage_name(i), p50, p95, p99);
        cr_assert_eq(json_integer_value(json_object_get(h, "n")), 500);
    }
    json_decref(j);
}

Test(common_metrics_hist, bad_json_is_refused_with_the_field_named)
{
    struct metrics m;
    vr_err e = { 0 };
    fill(&m, 5, 10);
    json_t *j = metrics_to_json(&m);
    json_t *dec = json_object_get(json_object_get(j, "stages"), "decode");
    /* a bucket index past the table */
    json_array_append_new(json_object_get(dec, "buckets"), json_pack("[ii]", HIST_BUCKETS, 1));
    char *s = json_dumps(j, 0);
    cr_assert_eq(metrics_from_string(&m, s, strlen(s), &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "decode") && strstr(e.msg, "bucket"), "%s", e.msg);
    free(s);
    json_decref(j);

    fill(&m, 5, 10);
    j = metrics_to_json(&m);
    json_object_set_new(json_object_get(json_object_get(j, "stages"), "encode"), "n", json_integer(11));
    s = json_dumps(j, 0);
    cr_assert_eq(metrics_from_string(&m, s, strlen(s), &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "encode"), "%s", e.msg);
    free(s);
    json_object_del(json_object_get(j, "stages"), "d2h");
    s = json_dumps(j, 0);
    cr_assert_eq(metrics_from_string(&m, s, strlen(s), &e), VR_EFORMAT);
    free(s);
    json_decref(j);

    cr_assert_eq(metrics_from_string(&m, "{", 1, &e), VR_EFORMAT);
    cr_assert_eq(metrics_from_string(&m, "{}", METRICS_MAX_JSON + 1, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "limit"), "%s", e.msg);
}
