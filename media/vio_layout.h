/*
 * vio_layout.h - a video's VR layout, and the `--layout auto` rule
 * (docs/notes/pipeline.md). It lives with the media code because the
 * controller decides it once per job, from the whole source, and every
 * chunk is processed with that answer:
 *   1. stereo3d side data (Matroska StereoMode, MP4 st3d) decides;
 *   2. spherical metadata without stereo3d means mono (360/180 mono);
 *   3. file-name tags VR players use: _TB/_3dv/_OU -> tb;
 *      _LR/_SBS/_3dh/_FISHEYE190/_MKX200/_180x180 -> sbs;
 *   4. aspect ratio within 5 % of 2:1 -> sbs (two square eyes, the usual
 *      VR180 release; a mono 2:1 equirect would carry spherical metadata),
 *      within 5 % of 1:2 -> tb (two stacked 2:1 eyes), else mono.
 */
#ifndef VR_VIO_LAYOUT_H
#define VR_VIO_LAYOUT_H

#include "vio_video.h"

/* Numbered as enum seg_layout (kernels/seg/seg.h), which the worker checks. */
enum vio_layout { VIO_LAYOUT_MONO = 0, VIO_LAYOUT_SBS, VIO_LAYOUT_TB };

/* The layout of the video described by `inf` at `path`; *why receives the
 * reason in words (static storage) for the log line. */
enum vio_layout vio_guess_layout(const struct vio_info *inf, const char *path, const char **why);

/* "mono" | "sbs" | "tb" -> the layout; "auto" -> VIO_LAYOUT_AUTO; else -1. */
#define VIO_LAYOUT_AUTO (-2)
int vio_layout_parse(const char *s);

/* The name of a layout ("mono", "sbs", "tb"; "auto" for VIO_LAYOUT_AUTO). */
const char *vio_layout_name(int layout);

#endif
