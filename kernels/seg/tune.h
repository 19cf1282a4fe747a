/*
 * tune.h - the auto-tuner of the CUDA engine: for one GPU, model, input
 * geometry and profile it times the network variants (struct netcu_opts:
 * fp16 / fp32, fused / unfused, element-wise block size, CUDA graph on /
 * off) at several batch sizes (frames per call, so tiles per netcu_run) on
 * a real-sized frame through the whole SEG_CUDA engine, drops every variant
 * whose mask strays more than TUNE_MAX_ABS from the CPU engine's (float32 C
 * network, C frame kernels), and picks the fastest per frame.
 *
 * Results are cached in a JSON file keyed by tune_key_string():
 * $VR_TUNE_CACHE, else ~/.cache/vrseg/tune.json. The file is an object
 * {"version": 1, "entries": {KEY: {...}}}; it is rewritten through a
 * temporary file and a rename, so a crash never leaves it half-written, and
 * a corrupt or oversized file is ignored (and replaced) rather than trusted.
 * seg_cuda_create() reads the cache; `vr-worker tune` fills it.
 *
 * The cache half (key string, load, store) is plain C and built everywhere;
 * tune_run() needs CUDA and returns VR_ENOTBUILT without it.
 */
#ifndef VR_TUNE_H
#define VR_TUNE_H

#include "config.h"
#include "model.h"
#include "net_cuda.h"
#include "seg.h"
#include "vr_err.h"

#include <stdint.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TUNE_MAX_ABS     0.02      /* largest |mask - CPU engine mask| accepted, [0,1] units */
#define TUNE_MAX_ROWS    96        /* candidates timed in one run */
#define TUNE_BUDGET_S    50.0      /* stop timing new candidates past this */
#define TUNE_CACHE_MAX   (1u << 20) /* bytes of a cache file we agree to read */

/* What a tuning result is valid for. */
struct tune_key {
    char gpu_name[96];
    int sm_count;
    char model_hash[17];
    int in_w, in_h;
    enum seg_layout layout;
    char profile[64];
};

/* "NAME|smN|HASH|WxH|layout|profile"; spaces in the GPU name become '_'. */
void tune_key_string(const struct tune_key *k, char *buf, size_t n);

/* The chosen variant. */
struct tune_choice {
    struct netcu_opts net;  /* max_batch: tiles per netcu_run when timed */
    int frames;             /* frames per call it was timed with */
    double ms_per_frame;    /* engine GPU time per frame at that batch */
    double max_abs;         /* its mask's distance from the CPU engine's */
};

/* Cache file path: $VR_TUNE_CACHE or $HOME/.cache/vrseg/tune.json. */
int tune_cache_path(char *buf, size_t n, vr_err *err);

/* Looks `key` up in the cache file. Returns 0 and fills *c, VR_ENOENT when
 * the file or the key is absent, or another VR_E* for an unreadable entry. */
int tune_cache_load(const char *path, const char *key, struct tune_choice *c, vr_err *err);

/* Adds or replaces `key` (other keys are kept; the file and its directory
 * are created as needed). */
int tune_cache_store(const char *path, const char *key, const struct tune_choice *c,
                     vr_err *err);

/* ---- running the tuner (CUDA) ---- */

/* An RGB24 picture the caller decoded (tune reads no files): borrowed for
 * the duration of tune_run(). */
struct tune_image {
    int w, h;
    int linesize;                 /* bytes per row, >= 3*w */
    const uint8_t *data;
};

struct tune_params {
    int gpu;                      /* CUDA device index */
    const struct vr_config *cfg;  /* profile (model, tiles, precision) */
    enum seg_layout layout;
    int in_w, in_h;               /* frame size */
    int force;                    /* 1: ignore a cached result */
    const struct tune_image *image; /* optional picture for the tiles' content, or NULL */
};

struct tune_row {
    struct netcu_opts net;
    int frames;            /* frames per call (tiles = frames * tiles per frame) */
    double ms;             /* median GPU time of one engine call (CUDA events) */
    double ms_per_frame;
    double tiles_per_s;
    double max_abs;        /* first mask vs the CPU engine's; < 0: not measured */
    int ok;                /* within TUNE_MAX_ABS */
    char note[48];         /* why a candidate failed, if it did */
};

struct tune_report {
    struct tune_key key;
    char key_str[320];
    char cache_path[512];
    int from_cache;        /* 1: no timing was done, the cached choice is shown */
    int tiles_per_frame;
    struct tune_row rows[TUNE_MAX_ROWS];
    int n_rows;
    int best;              /* index into rows, -1 when from_cache or none passed */
    struct tune_choice choice;
    double seconds;        /* wall time of the run */
};

/* Makes the key for device `gpu` (name and SM count from the device). */
int tune_key_make(int gpu, const struct model *m, const struct vr_config *cfg,
                  enum seg_layout layout, int in_w, int in_h, struct tune_key *k,
                  vr_err *err);

/* Tunes (or reads the cache unless force) and stores the choice. */
int tune_run(const struct tune_params *p, struct tune_report *r, vr_err *err);

#ifdef __cplusplus
}
#endif

#endif
