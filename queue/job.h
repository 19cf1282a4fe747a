/*
 * job.h - the job spec (what `vrctl submit` enqueues), the chunk task (what
 * a worker gets) and the split manifest (what the controller stitches from),
 * as JSON through jansson. Parsing is strict: unknown keys, wrong types,
 * values out of range and oversized texts are errors naming the key, so a
 * bad record in Redis fails one job with a reason instead of a process.
 */
#ifndef VR_JOB_H
#define VR_JOB_H

#include "chunk_range.h"
#include "vr_err.h"

#include <stddef.h>

#define JOB_ID_MAX     40
#define JOB_PATH_MAX   1024
#define JOB_MAX_JSON   16384            /* spec or task text */
#define JOB_CONFIG_MAX 2048             /* a job's config overrides, JSON text */
#define JOB_MAX_MANIFEST (8 << 20)      /* manifest.json */
#define JOB_MAX_CHUNKS 100000           /* chunks a job may have (= REMUX_MAX_CHUNKS) */
#define JOB_NOTIFY_MAX 1024             /* a webhook URL, with its NUL */
/* What a chunk's files on the storage may hold, checked before the
 * controller reads or sums them (issue 41, finding 1): an encoded output
 * frame at most JOB_FRAME_BYTES_MAX (8K 4:4:4 raw is 96 MiB; encoded ones
 * are far smaller), a timestamp sidecar JOB_TS_BYTES_PER_FRAME a frame,
 * both plus JOB_CHUNK_BYTES_SLACK for the container and the other streams;
 * frames counted at most JOB_CHUNK_FRAMES_MAX a chunk. */
#define JOB_FRAME_BYTES_MAX   (128LL << 20)
#define JOB_TS_BYTES_PER_FRAME 4096LL
#define JOB_CHUNK_BYTES_SLACK (64LL << 20)
#define JOB_CHUNK_FRAMES_MAX  1000000LL

struct job_spec {
    char id[JOB_ID_MAX];
    char input[JOB_PATH_MAX];       /* absolute path, visible to controllers */
    char output[JOB_PATH_MAX];      /* absolute path */
    char profile[64];               /* fast | balanced | quality */
    char output_kind[16];           /* mask | alpha | greenscreen */
    double chunk_seconds;           /* 0.2 .. 3600, or 0: chosen from the fleet */
    int chunk_wave;                 /* 0 .. JOB_WAVE_SLOTS_MAX: the last wave's chunks graded
                                     * over this many workers (remux_plan_opts.wave_slots;
                                     * vrctl run sets it with the length it chose); 0: even */
    int priority;                   /* -100 .. 100, recorded for status */
    int max_attempts;               /* deliveries before a chunk is dead-lettered */
    int replace;                    /* 1: an existing output is replaced (vrctl -y); 0: the
                                     * controller fails the job instead (issue 41, 3) */
    long long created_ms;
    char layout[8];                 /* auto | mono | sbs | tb (auto: decided at the split) */
    char config[JOB_CONFIG_MAX];    /* overrides on the profile (-c FILE), a JSON object
                                     * as text, checked at submit; "" = none */
    char notify[JOB_NOTIFY_MAX];    /* webhook POSTed when the job ends (job_notify_check);
                                     * "" = none, and then absent from the JSON */
    char alpha_area[8];             /* alpha output: "" (auto: refused where the eyes'
                                     * corners hold picture) or "corners" (packed there
                                     * anyway); absent from the JSON when "" */
    char chunking[8];               /* auto | range | copy: chunks read as ranges of the
                                     * source (auto: where the plan can), or cut into files
                                     * (copy: for workers that cannot see the input) */
    char on_decode_error[8];        /* conceal | fail ("" = conceal, absent from the JSON):
                                     * what a damaged packet does (job_decode_error_fail) */
};

struct chunk_task {
    char job[JOB_ID_MAX];
    int idx;
    char in[JOB_PATH_MAX];          /* relative to the storage root */
    char out[JOB_PATH_MAX];         /* relative to the storage root */
    char profile[64];
    char output_kind[16];
    long long frames;               /* frames the chunk holds (its output) */
    long long preroll_until;        /* ms: frames before it are a pre-roll (remux.h); 0 = none */
    long long warmup_from;          /* ms: pre-roll frames from here on warm the temporal filter
                                     * up (segmented, not output); = preroll_until: none */
    char layout[8];                 /* mono | sbs | tb, the job's (decided once for all chunks);
                                     * "" in tasks of older controllers: the worker guesses */
    char config[JOB_CONFIG_MAX];    /* the job's config overrides, "" = none */
    char on_decode_error[8];        /* the job's: conceal | fail ("" = conceal) */
    char alpha_area[8];             /* the job's (struct job_spec) */
    int is_range;                   /* 1: `source` and `range` are set, `in` is "" (JSON: the
                                     * "range" object); 0: `in` is a chunk file of the copy
                                     * split */
    char source[JOB_PATH_MAX];      /* a range's source (JSON: range.source): the job's
                                     * input, absolute or a URL; under the workers'
                                     * --input-root */
    struct chunk_range range;       /* common/chunk_range.h; LLONG_MIN / LLONG_MAX (= INT64_*)
                                     * say "none" and "open" as there */
};

/* The longest chunk the fleet chooses, and the shortest: long enough that a
 * chunk's fixed cost (decoder and encoder open, the pre-roll GOP decoded
 * twice) stays a small part of it, short enough that a reclaimed chunk
 * loses little and a short clip still spreads over every worker. */
#define JOB_CHUNK_SECONDS_DEFAULT 10
#define JOB_CHUNK_SECONDS_MIN_AUTO 2
/* An elastic job's pieces (auto chunk length, ranges): the places a chunk
 * may be cut at while it runs (controller/ctl_cut.c), this long at most
 * (keyframes permitting). Half a second: a straggler keeps what its reader
 * read ahead rounded up to the next piece (issue 44); at 1 s it kept 20
 * frames of a 10 fps test clip where 15 were enough. */
#define JOB_CUT_PIECE_S 0.5
/* The most pieces an elastic job is planned in: its plan's limit
 * (JOB_MAX_CHUNKS) less a tenth, for a duration the container misstates. */
#define JOB_CUT_PIECES_MAX (JOB_MAX_CHUNKS / 10 * 9)
#define JOB_WAVE_SLOTS_MAX 4096        /* a job record's chunk_wave, range-checked */

/* A picture output (alpha-packed, greenscreen) re-encodes the whole frame:
 * on a GPU without NVENC its CPU encode is the job's cost, 10-30 times a
 * matte's (docs/PERF.md, "Passthrough"). Its chunks are shorter, at least
 * JOB_PICTURE_CHUNKS_PER_SLOT a worker and down to one second, so the last
 * chunks end together and every core works to the end of the job. */
#define JOB_PICTURE_CHUNKS_PER_SLOT 4
#define JOB_CHUNK_SECONDS_MIN_PICTURE 1

/* 1 for output kinds that re-encode the picture ("alpha", "alpha-packed",
 * "greenscreen"), 0 for the matte. */
int job_output_is_picture(const char *kind);

/* The chunk length for a source of duration_s over `slots` workers: at
 * most JOB_CHUNK_SECONDS_DEFAULT, at least JOB_CHUNK_SECONDS_MIN_AUTO, and
 * a whole number of waves of chunks, so the last wave keeps every worker
 * busy instead of leaving most of them idle at the tail; for a picture
 * output at least JOB_PICTURE_CHUNKS_PER_SLOT waves, at least
 * JOB_CHUNK_SECONDS_MIN_PICTURE. Unknown duration or slots: the default. */
double job_auto_chunk_seconds(double duration_s, int slots, int picture);

/* An elastic job's piece length for chunks of chunk_s over a source of
 * duration_s (0 unknown): JOB_CUT_PIECE_S, half a chunk for short chunks,
 * and longer for a long source, so that it is planned in
 * JOB_CUT_PIECES_MAX pieces at most (0.5 s up to 12.5 h; 1.92 s at 48 h),
 * in whole milliseconds: the job record keeps it so, and a controller
 * that takes the job over plans the same pieces again. */
double job_cut_piece_seconds(double chunk_s, double duration_s);

/* Defaults: balanced, mask, chunk length chosen from the fleet (0),
 * priority 0, 3 attempts. */
void job_spec_defaults(struct job_spec *j);

/* A new job id: "<UTC yyyymmdd-hhmmss>-<8 hex random>". */
void job_new_id(char *buf, size_t n);

/* 1 when `id` is a plausible job id (alnum and '-', 1..JOB_ID_MAX-1). */
int job_id_valid(const char *id);

/* 1 when kind is mask|alpha|greenscreen. */
int job_output_kind_valid(const char *kind);

/* 1 when l is mono|sbs|tb, or auto when allow_auto. */
int job_layout_valid(const char *l, int allow_auto);

/* 1 when c is auto|range|copy (a spec's chunking; "" is auto too). */
int job_chunking_valid(const char *c);

/* --on-decode-error: 1 for "fail", 0 for "conceal" (and "", which older
 * records hold: ffmpeg's default), -1 for anything else. */
int job_decode_error_fail(const char *s);

/* 1 when a job in `state` has ended: done, failed or cancelled. */
int job_state_ended(const char *state);

/* Every state a job can be in, in the order of its life. */
#define JOB_NSTATES 7
extern const char *const job_states[JOB_NSTATES];

/* `state` itself when it is one of job_states, else NULL (a record's text
 * may be anything). */
const char *job_state_known(const char *state);

/* Checks a webhook URL (a job's --notify, the controller's): http:// or
 * https:// (any case) then a host, at most JOB_NOTIFY_MAX-1 bytes, printable
 * ASCII only (no space, no control character). Returns 0, or VR_EINVAL with
 * the reason in err (the URL is not repeated in it). */
int job_notify_check(const char *url, vr_err *err);

/* Serialises into a malloc'd compact JSON string (*out, free()). */
int job_spec_to_json(const struct job_spec *j, char **out, vr_err *err);
int chunk_task_to_json(const struct chunk_task *t, char **out, vr_err *err);

/* Strict parsers; `len` bounds the text (JOB_MAX_JSON). */
int job_spec_parse(const char *json, size_t len, struct job_spec *j, vr_err *err);
int chunk_task_parse(const char *json, size_t len, struct chunk_task *t, vr_err *err);

/* ---- manifest: the split's result, written next to the chunks ---- */

struct job_manifest {
    int ranges;                /* 1: chunks are ranges of the source (no in/ files); a
                                * chunk's frames and `frames` may be -1 (known once the
                                * chunks commit) */
    int nchunks;               /* an elastic plan's (controller/ctl_cut.c): its pieces, each
                                * a chunk's index, of which chunks start at some */
    int live_chunks;           /* not written: the chunks a plan queued (0: nchunks) */
    long long frames;          /* source video frames */
    double duration_s;
    double split_s;            /* seconds the split took */
    long long *chunk_frames;   /* [nchunks], owned */
    long long *chunk_preroll;  /* [nchunks], owned: preroll_until of each chunk (0 = none) */
    long long *chunk_warmup;   /* [nchunks], owned: warmup_from of each chunk (-1 = none) */
};

/* Writes {"frames","duration_s","split_s","chunks":[frames...],
 * "preroll_until":[ms...],"warmup_from":[ms...]} durably (the last two only
 * when a chunk has one). */
int job_manifest_write(const char *path, const struct job_manifest *m, vr_err *err);

/* Sets m's counts and allocates its per-chunk arrays for nchunks (frames
 * 0, pre-roll 0, warm-up -1: none); VR_ENOMEM leaves m releasable. */
int job_manifest_alloc(struct job_manifest *m, int nchunks, long long frames, double duration_s,
                       double split_s);

/* Reads and checks it (counts add up, limits); release with _release. */
int job_manifest_read(const char *path, struct job_manifest *m, vr_err *err);
void job_manifest_release(struct job_manifest *m);

#endif
