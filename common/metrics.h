/*
 * metrics.h - per-stage latency histograms and counters for one pipeline run
 * (a whole video or one chunk), mergeable across chunks and workers.
 *
 * A histogram is HDR-style: fixed, log-spaced buckets from 1 µs to 100 s, each
 * HIST_GROWTH wide, so any percentile read back is within ~2% of the true
 * value (the bucket's geometric midpoint, clamped to the exact min and max).
 * Because every histogram has the same buckets, merging is exact: merging the
 * histograms of two halves of a run gives bit-for-bit the histogram of the
 * whole run. Percentiles of a job are therefore read from merged histograms,
 * never averaged from per-chunk percentiles.
 *
 * JSON (metrics_to_json / metrics_from_json) is the wire format a worker
 * sends through Redis with a chunk's result; it carries the sparse bucket
 * counts (so the receiver can merge) plus derived p50/p95/p99 for humans.
 *
 * Thread-safety: none inside. A histogram has one writer at a time (the
 * pipeline gives each stage thread its own, or guards with its own lock).
 */
#ifndef VR_METRICS_H
#define VR_METRICS_H

#include "vr_err.h"

#include <jansson.h>
#include <stdint.h>

/* ---- histogram ---- */

#define HIST_LO_US   1.0      /* lower edge of bucket 0; smaller values land in it */
#define HIST_HI_US   1e8      /* 100 s; larger values land in the last bucket */
#define HIST_GROWTH  1.04     /* bucket width ratio: midpoint error <= ~1.98% */
#define HIST_BUCKETS 470      /* ceil(ln(HI/LO) / ln(GROWTH)) */

struct hist {
    uint64_t count;               /* values recorded */
    uint64_t sum_ns;              /* exact sum, values rounded to ns (exact merge) */
    double min_us, max_us;        /* exact extremes (0 when count == 0) */
    uint64_t b[HIST_BUCKETS];     /* bucket counts */
};

/* Clears to empty. */
void hist_reset(struct hist *h);

/* Records one value in microseconds (negative values count as 0). */
void hist_record(struct hist *h, double us);

/* Adds every value of `src` into `dst` (exact). */
void hist_merge(struct hist *dst, const struct hist *src);

/* The p-th percentile (0..100) in µs: the value at rank ceil(p/100 * count)
 * reported as its bucket's geometric midpoint clamped to [min, max] (the
 * first and last ranks give the exact min and max); 0 when empty. */
double hist_percentile(const struct hist *h, double p);

/* Mean in µs (from the exact sum); 0 when empty. */
double hist_mean(const struct hist *h);

/* New JSON object {"n","sum_ns","min_us","max_us","mean_us","p50_us",
 * "p95_us","p99_us","buckets":[[index,count],...]} (only non-empty buckets);
 * the caller owns the reference (json_decref). NULL on allocation failure. */
json_t *hist_to_json(const struct hist *h);

/* Parses what hist_to_json wrote into *h (reset first). Checks every index
 * against HIST_BUCKETS and that bucket counts add up to "n"; derived fields
 * (mean/p50/...) are ignored. `what` names the histogram in errors.
 * Returns 0 or VR_EFORMAT. `j` is borrowed. */
int hist_from_json(struct hist *h, const json_t *j, const char *what, vr_err *err);

/* ---- the stages of the pipeline ---- */

enum metrics_stage {
    MET_DECODE = 0,   /* demux + decode, per frame */
    MET_PREPROCESS,   /* colour convert + resize into network input */
    MET_H2D,          /* host -> device copies (0 on the all-GPU path) */
    MET_INFERENCE,    /* the network */
    MET_D2H,          /* device -> host copies of the mask */
    MET_POSTPROCESS,  /* blend, refine, smooth, output composition */
    MET_ENCODE,       /* encode + mux, per frame */
    MET_END_TO_END,   /* frame decoded -> frame handed to the muxer */
    MET_NSTAGES
};

/* "decode", "preprocess", "h2d", "inference", "d2h", "postprocess",
 * "encode", "end_to_end"; NULL when out of range. */
const char *metrics_stage_name(int stage);

/* Everything one run reports. Merging (metrics_merge) adds histograms,
 * counters and busy seconds, and keeps the maximum GPU memory; fps of a
 * merged set is frames / wall_s, i.e. the throughput of one worker while
 * busy (the controller measures a job's elapsed fps with its own clock). */
struct metrics {
    struct hist stage[MET_NSTAGES];
    uint64_t frames;          /* frames written */
    uint64_t bytes_in;        /* input packets' bytes (video) */
    uint64_t bytes_out;       /* output packets' bytes (all streams) */
    double wall_s;            /* seconds from first packet read to file renamed */
    uint64_t gpu_mem_peak;    /* bytes, peak device memory used by the process (0 = unknown) */
    double gpu_util_sum;      /* sum of NVML utilisation samples (percent) */
    uint64_t gpu_util_samples;/* number of samples; mean = sum / samples */
    uint64_t concealed;       /* decode errors concealed (damaged packets, --on-decode-error
                               * conceal); absent from older JSON: 0 */
};

/* Clears to empty. */
void metrics_reset(struct metrics *m);

/* Adds `src` into `dst` (see struct metrics for how each field combines). */
void metrics_merge(struct metrics *dst, const struct metrics *src);

/* frames / wall_s, or 0. */
double metrics_fps(const struct metrics *m);

/* Mean GPU utilisation in percent, or -1 when never sampled. */
double metrics_gpu_util(const struct metrics *m);

/* New JSON object {"version":1,"frames","bytes_in","bytes_out","wall_s",
 * "fps","gpu_mem_peak","gpu_util_sum","gpu_util_samples","gpu_util",
 * "concealed","stages":{"decode":{hist},...}}; caller owns it. NULL on
 * ENOMEM. */
json_t *metrics_to_json(const struct metrics *m);

/* Parses metrics_to_json's object into *m (reset first); every stage must be
 * present. `j` is borrowed. Returns 0 or VR_EFORMAT with the field named. */
int metrics_from_json(struct metrics *m, const json_t *j, vr_err *err);

/* The same through text, for Redis fields and files. metrics_to_string
 * returns a malloc'd compact JSON string (free()) or NULL.
 * metrics_from_string refuses text longer than METRICS_MAX_JSON. */
#define METRICS_MAX_JSON (1 << 20)
char *metrics_to_string(const struct metrics *m);
int metrics_from_string(struct metrics *m, const char *s, size_t len, vr_err *err);

/* Writes metrics_to_json, indented, to `path` (temp name + rename).
 * Returns 0 or VR_EIO with the path named. */
int metrics_write_file(const struct metrics *m, const char *path, vr_err *err);

#endif
