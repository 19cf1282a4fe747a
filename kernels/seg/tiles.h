/*
 * tiles.h - the tile plan of a frame: which rectangles of each eye go
 * through the network and where their outputs land in the eye's work mask.
 * Plain C, computed once at seg_create() and shared by both backends.
 *
 * An eye (the whole frame for mono, a half for sbs/tb) gets a cols x rows
 * grid, chosen by the eye's size (tile_grid_pick), of overlapping tiles
 * whose aspect matches the model's input, so the network sees people
 * undistorted; neighbours share `tile_overlap` of a tile (more when
 * grown); the outer tiles touch the eye's borders. With tile_stagger a
 * second grid of (cols-1) x (rows-1) tiles of the same size is centred on
 * the first's inner crossings (each half way between its four neighbours),
 * so a person one grid's border cuts is whole in a tile of the other; the
 * blend's tile_favor lets that tile's "person" win (frame_blend_ref).
 * With tile_fine a third grid of (cols+1) x (rows+1) smaller tiles at
 * tile_overlap shows a person every tile of the grid shows too small
 * for the model larger (within TILE_MAX_PER_EYE; none when the grid is).
 * When whole_pass is set
 * (or the grid is 0 x 0) the whole eye is also one tile, blended with a
 * low weight under the others. The work mask keeps the eye's aspect with its
 * long side = work_size (never larger than the eye).
 */
#ifndef VR_TILES_H
#define VR_TILES_H

#include "config.h"
#include "frame_ref.h"
#include "seg.h"
#include "vr_err.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TILE_MAX_GRID CONFIG_TILE_MAX                     /* per axis (config.h checks it) */
/* the grid, its staggered twin (tile_stagger) and the whole pass */
#define TILE_MAX_PER_EYE (TILE_MAX_GRID * TILE_MAX_GRID + (TILE_MAX_GRID - 1) * (TILE_MAX_GRID - 1) + 1)

/* The plan of one eye. */
struct tile_eye {
    struct frame_rect eye;                  /* the eye, frame pixels */
    struct frame_rect out;                  /* the eye in the output mask */
    int work_w, work_h;                     /* work mask size */
    int n;                                  /* tiles (incl. the whole pass) */
    struct frame_rect src[TILE_MAX_PER_EYE];/* frame pixels, for preprocess */
    struct frame_tile dst[TILE_MAX_PER_EYE];/* work pixels, for blend */
};

struct tile_plan {
    int n_eyes;             /* 1 (mono) or 2 */
    struct tile_eye eye[2];
    int max_tiles;          /* largest eye[i].n */
};

/* The most a grown grid's tiles share of each other (tile_grid_pick) */
#define TILE_GROWN_OVERLAP 0.5

/* The grid an eye gets (tile_grid_pick). */
struct tile_grid {
    int cols, rows;         /* 0 x 0: no tiles, the whole pass alone */
    double tile_w;          /* a tile's width, eye px (height: / the model's aspect) */
    int grown;              /* 1: the tiles grew to the smallest size, sharing more
                             * than tile_overlap */
};

/* The grid of an eye_w x eye_h eye for a model of mw x mh: the largest, up to
 * cfg's tile_cols x tile_rows, whose tiles are at least tile_min * mw eye
 * pixels wide, either at tile_overlap or grown to that width while they
 * share at most TILE_GROWN_OVERLAP; else none. So a small eye gets fewer
 * tiles (or none), and a large one the profile's grid. Plain arithmetic,
 * shared by the CPU and GPU engines through tile_plan_make. */
void tile_grid_pick(const struct vr_config *cfg, int eye_w, int eye_h, int mw, int mh,
                    struct tile_grid *g);

/* Plans the eyes of an in_w x in_h frame (mask out_w x out_h) for a model of
 * mw x mh with cfg's tile_cols, tile_rows, tile_overlap, tile_min,
 * whole_pass and work_size. Returns 0, or VR_EINVAL naming the bad value (a grid over
 * TILE_MAX_GRID, a frame too small for its layout). */
int tile_plan_make(const struct vr_config *cfg, enum seg_layout layout,
                   int in_w, int in_h, int out_w, int out_h, int mw, int mh,
                   struct tile_plan *p, vr_err *err);

#ifdef __cplusplus
}
#endif

#endif
