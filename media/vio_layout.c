/*
 * vio_layout.c - `--layout auto`: which VR layout a video has, from its
 * metadata, its file name or its shape (see vio_layout.h).
 */
#define _GNU_SOURCE /* strcasestr */
#include "vio_layout.h"

#include <ctype.h>
#include <string.h>

/* A tag counts in the file name (not the directories) when what follows it
 * is not a letter or digit: "_OU." and "_OU_" are tags, "_output" is not. */
static int name_has(const char *path, const char *const *tokens)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (; *tokens; tokens++) {
        size_t n = strlen(*tokens);
        for (const char *p = base; (p = strcasestr(p, *tokens)); p++)
            if (!isalnum((unsigned char)p[n]))
                return 1;
    }
    return 0;
}

enum vio_layout vio_guess_layout(const struct vio_info *inf, const char *path, const char **why)
{
    static const char *const sbs_tags[] = { "_LR", "_SBS", "_3dh", "_FISHEYE190", "_MKX200", "_180x180", NULL };
    static const char *const tb_tags[] = { "_TB", "_3dv", "_OU", NULL };
    if (inf->stereo >= 0) {
        *why = "stereo3d metadata";
        return (enum vio_layout)inf->stereo;
    }
    if (inf->spherical) {
        *why = "spherical metadata without stereo3d: mono 360/180";
        return VIO_LAYOUT_MONO;
    }
    if (name_has(path, tb_tags)) {
        *why = "file name tag (_TB/_3dv/_OU)";
        return VIO_LAYOUT_TB;
    }
    if (name_has(path, sbs_tags)) {
        *why = "file name tag (_LR/_SBS/_3dh/_FISHEYE190...)";
        return VIO_LAYOUT_SBS;
    }
    double a = (double)inf->w / inf->h;
    if (a > 1.9 && a < 2.1) {
        *why = "aspect ratio 2:1 (two square eyes); use --layout mono for mono 360";
        return VIO_LAYOUT_SBS;
    }
    if (a > 1 / 2.1 && a < 1 / 1.9) {
        *why = "aspect ratio 1:2 (two stacked eyes)";
        return VIO_LAYOUT_TB;
    }
    *why = "aspect ratio: not 2:1 or 1:2";
    return VIO_LAYOUT_MONO;
}

int vio_layout_parse(const char *s)
{
    static const char *const names[] = { "mono", "sbs", "tb" };
    if (!strcmp(s, "auto"))
        return VIO_LAYOUT_AUTO;
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

const char *vio_layout_name(int layout)
{
    switch (layout) {
    case VIO_LAYOUT_MONO: return "mono";
    case VIO_LAYOUT_SBS: return "sbs";
    case VIO_LAYOUT_TB: return "tb";
    case VIO_LAYOUT_AUTO: return "auto";
    default: return "?";
    }
}
