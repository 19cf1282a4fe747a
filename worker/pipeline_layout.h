/*
 * pipeline_layout.h - the `--layout auto` rule (docs/notes/pipeline.md):
 *   1. stereo3d side data (Matroska StereoMode, MP4 st3d) decides;
 *   2. spherical metadata without stereo3d means mono (360/180 mono);
 *   3. file-name tags VR players use: _TB/_3dv/_OU -> tb;
 *      _LR/_SBS/_3dh/_FISHEYE190/_MKX200/_180x180 -> sbs;
 *   4. aspect ratio within 5 % of 2:1 -> sbs (two square eyes, the usual
 *      VR180 release; a mono 2:1 equirect would carry spherical metadata),
 *      within 5 % of 1:2 -> tb (two stacked 2:1 eyes), else mono.
 */
#ifndef VR_PIPELINE_LAYOUT_H
#define VR_PIPELINE_LAYOUT_H

#include "seg.h"
#include "vio_video.h"

/* The layout of the video described by `inf` at `path`; *why receives the
 * reason in words (static storage) for the log line. */
enum seg_layout pipeline_guess_layout(const struct vio_info *inf, const char *path,
                                      const char **why);

#endif
