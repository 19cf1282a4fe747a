/*
 * util-quality.h - the clips the matte-quality tests measure (issue 39:
 * t-seg-quality.c, t-seg-quality-people.c): read and scaled, each shipped
 * profile run on them with the CPU engine, and made.mkv's truth.
 */
#ifndef VR_T_UTIL_QUALITY_H
#define VR_T_UTIL_QUALITY_H

#include "config.h"
#include "seg.h"
#include "seg_quality.h"

#include <libavutil/frame.h>
#include <stdint.h>

#define CLIP   "tests/data/video/sbs.mkv"
#define FRAMES 8

/* tests/data/video/made.mkv: bench/quality-made.sh at EYE 480 (960x480 SBS,
 * tiles run): people.jpg at three sizes over a background with no person,
 * and made-truth.mkv, its truth (FFV1 gray, people.jpg's person mask put
 * where the photo is). Against a truth, holes and false foreground count
 * what a user sees; against `fast`, which finds no one on this clip
 * (holes 100% against the truth), they meant nothing. */
#define MADE       "tests/data/video/made.mkv"
#define MADE_TRUTH "tests/data/video/made-truth.mkv"
#define MADE_FRAMES 4

static const char *const profiles[] = { "fast", "balanced", "quality" };
enum { NP = 3 };

struct clip {
    int n, w, h;
    AVFrame *f[FRAMES];   /* YUV420P, w x h */
    uint8_t *luma[FRAMES];/* the Y plane, rows of w */
};

/* The first `frames` (<= FRAMES) frames of `path`, scaled to w x h (0: as they are). */
void clip_read(struct clip *c, const char *path, int frames, int w, int h);

void clip_free(struct clip *c);

/* The clip's mattes (m[i], allocated) by `profile`, with `over` (JSON or
 * NULL) applied over it; returns the engine, for its tile plan. */
struct seg *profile_run(const struct clip *c, const char *profile, const char *over,
                        uint8_t **m);

/* The truth's (path: 8-bit gray) first n frames at w x h (rows of w),
 * t[i] allocated. */
void truth_read(uint8_t **t, const char *path, int n, int w, int h);

#endif
