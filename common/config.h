/*
 * config.h - processing settings: profiles (configs/<name>.json) plus
 * overrides (-c FILE), read through jansson.
 *
 * A profile is a flat JSON object whose keys are listed in config.c's key
 * table, each with its type and range; an unknown key, a wrong type or a
 * value out of range is an error naming the key and the file. Later files
 * override earlier ones key by key, so `--profile fast -c mine.json` starts
 * from fast and changes only what mine.json names.
 */
#ifndef VR_CONFIG_H
#define VR_CONFIG_H

#include "vr_err.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CONFIG_STR 256
#define CONFIG_TILE_MAX 8  /* tile_cols / tile_rows: the engine's grid limit (kernels/seg/tiles.h) */
#define CONFIG_TILE_FAVOR_MAX 3 /* tile_favor: the blend's largest power (kernels/seg/frame_ref.h) */

struct vr_config {
    char profile[64];          /* name of the profile loaded first */
    /* network */
    /* A job's config names its model; it never paths it (issue 27, finding 1):
     * `model` is a file name in models/ without ".tflite", and only the local
     * user's own --model PATH fills model_file, which no JSON key reaches. */
    char model[CONFIG_STR];    /* model name: models/<model>.tflite */
    char model_file[CONFIG_STR]; /* a path given on the command line, or "" */
    char fuse_model[CONFIG_STR]; /* "none", or a second model (a name in models/) run
                                  * on each whole eye, lifting the mask where it is
                                  * sure (frame_fuse_ref): the two selfie models
                                  * fail on different pictures */
    char precision[8];         /* "fp16" | "fp32" (GPU; CPU is always fp32) */
    /* tiling, per eye */
    int tile_cols, tile_rows;  /* the largest grid of overlapping tiles; 0x0 = none */
    double tile_overlap;       /* fraction of a tile shared with its neighbour */
    double tile_min;           /* smallest tile side, in model inputs: an eye too small
                                * for the grid's tiles gets a coarser grid
                                * (kernels/seg/tiles.h, tile_grid_pick) */
    int tile_stagger;          /* 1: a second grid of (cols-1) x (rows-1) tiles centred on the
                                * grid's inner crossings, so a person a border cuts is seen
                                * whole by one tile (kernels/seg/tiles.h) */
    int tile_fine;             /* 1: a third grid, one tile more a side, at tile_overlap and
                                * not held to tile_min: a person every tile of the grid
                                * shows too small for the model is larger in one of it */
    int tile_favor;            /* the blend's lean to "person": a tile's weight times its
                                * value to this power (frame_blend_ref); 0: the mean */
    double tile_favor_floor;   /* the factor's least, f + (1 - f) * value: a tile that says
                                * "no one" keeps that share of its vote, so its feather
                                * still ramps where a neighbour's find ends (0: none) */
    int whole_pass;            /* also run the whole eye once, blended under tiles */
    int work_size;             /* long side (px) of the eye mask tiles are blended into */
    int tile_gate;             /* >0: tiles bounded by the whole pass dilated by this many
                                * model pixels (frame_gate_ref); 0: tiles free */
    int morph;                 /* close+open radius (work px) of the eye mask, 0 = off */
    int stereo_bands;          /* >0: each eye's mask fused with the other's warped by the
                                * disparity of this many row bands (frame_stereo.h); 0 off */
    /* the people tier (kernels/seg/people.h; both engines) */
    char people[16];           /* "none" | "pose": MediaPipe Pose's detector finds people
                                * in each eye, each one's ROI is segmented and pasted in */
    int people_size;           /* long side (px) of the eye picture the tier reads */
    int people_grid;           /* the detector also runs on N x N overlapping crops of
                                * the eye (far people); 0: the whole eye only */
    double people_zoom;        /* > 1: also zoomed crops, POSE_DET_SIZE / N px of the eye
                                * picture, 8 x 8 at most (people far away); 0: off */
    double people_zoom2;       /* > 1: a second such layout at this zoom (a far person
                                * one scale misses, the other finds); 0: off */
    int people_zoom_split;     /* stereo with both zooms and stereo_bands: the left eye
                                * takes people_zoom's layout, the right people_zoom2's;
                                * the eyes' fusion carries each eye's finds to the other
                                * (kernels/seg/people.h) */
    /* refinement to full resolution */
    char refine[16];           /* "guided" | "bilinear" */
    int guided_radius;         /* box radius at work resolution */
    int guided_band;           /* >0: the guided filter held to the edge band, a ramp this
                                * many work px wide around where the work mask changes;
                                * flat parts take the mask's mean over guided_radius (no
                                * glow, no texture of the guide); 0: everywhere
                                * (frame_guided_band_ref) */
    double guided_eps;         /* regularisation, in [0,1]^2 intensity units */
    /* temporal filter over a window of frames (kernels/seg/frame_temporal.h) */
    double smooth;             /* weight decay per frame back, 0 = off */
    int smooth_frames;         /* window, the current frame included (1 = off) */
    int smooth_still;          /* luma change (0..255) under which a pixel is still */
    int smooth_still_radius;   /* the stillness test takes the largest luma change within
                                * this many pixels (0: the pixel's own) */
    int smooth_hold;           /* >0: a still pixel keeps its output while the filtered
                                * value stays within this many levels; 0 off */
    double scene_cut;          /* mean luma change (0..255) that starts a shot, 0 = never */
    /* pipeline */
    int batch;                 /* frames per GPU batch */
    double output_scale;       /* matte size relative to the input frame */
    char encoder[32];          /* "auto" or an FFmpeg encoder name */
    int crf;                   /* encoder quality (x264/x265 CRF) */
    char preset[16];           /* encoder preset ("ultrafast", ...) */
    int matte_intra_p;         /* vrh264: Intra 16x16 MBs in P frames (on by default:
                                * smaller, sharper smooth mattes; ~1.7x the GPU time
                                * a frame); travels with the job, so every worker
                                * codes alike */
};

/* Built-in defaults (the "balanced" values); never fails. */
void config_defaults(struct vr_config *c);

/* Applies the JSON object in `path` on top of *c. */
int config_apply_file(struct vr_config *c, const char *path, vr_err *err);

/* Applies a JSON text (for tests and --set); `src` names it in errors. */
int config_apply_text(struct vr_config *c, const char *json, const char *src,
                      vr_err *err);

/* The --crf and --encoder flags of `vr-worker process`, `vrctl submit` and
 * `vrctl run` as config overrides: a compact JSON object (caller frees)
 * with "crf" when crf >= 0 and "encoder" when encoder is non-NULL; NULL
 * when neither is given or out of memory. Applied with config_apply_text
 * after -c's file, so a flag wins over the file. */
char *config_flags_json(int crf, const char *encoder);

/* The shipped profiles, as the commands' --help names them. */
#define CONFIG_PROFILES_HELP "fast, balanced (default), quality or quality-people"

/* Defaults, then configs/<name>.json (found with vr_data_path). An unknown
 * profile is an error listing the known ones. */
int config_load_profile(struct vr_config *c, const char *name, vr_err *err);

/* The hold's longest run without a refresh (frames; frame_temporal.h). */
#define CONFIG_HOLD_SPAN 8

/* The temporal filter's stillness test: the largest neighbourhood radius
 * (smooth_still_radius; frame_temporal.h). */
#define CONFIG_STILL_R_MAX 4

#define CONFIG_GUIDED_BAND_MAX 16 /* guided_band's largest ramp (work px) */

/* The people tier's window: frame t's people depend on frames t-W+1..t
 * (kernels/seg/people_track.h). */
#define CONFIG_PEOPLE_WINDOW 4

/* Frames before the current one that a frame's matte depends on: the
 * temporal filter's window less one, more with smooth_hold (0 when
 * smoothing is off; kernels/seg/frame_temporal.h), plus the people tier's
 * CONFIG_PEOPLE_WINDOW - 1 when it is on (people_track.h): the warm-up a
 * chunk needs so that its mattes equal a whole run's. */
int config_history_frames(const struct vr_config *c);

/* 1 if s is a plain name: letters, digits, '_', '-', '.', not starting with
 * '.' (so no '/', no "..", no hidden file). */
int config_name_ok(const char *s);

/* The model's file: model_file when the command line gave one, else
 * models/<model>.tflite found with vr_data_path (the worker's own data
 * directory). A bad name or a missing model is an error naming only the name;
 * the caller opens the file with model_load, which refuses a non-regular one. */
int config_model_file(const struct vr_config *c, char *out, size_t n, vr_err *err);

/* Writes the config as a JSON object into buf; returns bytes or -1. */
int config_to_json(const struct vr_config *c, char *buf, int size);

#ifdef __cplusplus
}
#endif

#endif
