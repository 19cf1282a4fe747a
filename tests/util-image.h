/*
 * util-image.h - small helpers shared by the image-path tests
 * (t-image-*.c, t-seg-*.c): run vr-worker, read a mask PNG back, measure
 * the mean mask in a box, make a scratch directory (shell commands: tsh
 * from util-redis.h). Static, header-only:
 * each test file gets its own copy.
 */
#ifndef VR_T_IMAGE_HELPERS_H
#define VR_T_IMAGE_HELPERS_H

#include "util-redis.h" /* tsh: run a shell command line */
#include "vio_image.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Path of a built binary: $VR_BIN_DIR/name (default bin/name). */
static inline void timg_bin(char *out, size_t n, const char *name)
{
    const char *d = getenv("VR_BIN_DIR");
    snprintf(out, n, "%s/%s", d && *d ? d : "bin", name);
}

/* A fresh scratch directory (mkdtemp), path into out. */
static inline void timg_tmpdir(char *out, size_t n)
{
    snprintf(out, n, "/tmp/vrt-image-XXXXXX");
    cr_assert_not_null(mkdtemp(out));
}

/* Reads a whole small text file into buf (NUL-terminated). */
static inline void timg_slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    size_t got = 0;
    if (f) {
        got = fread(buf, 1, n - 1, f);
        fclose(f);
    }
    buf[got] = 0;
}

/* A mask PNG read back: w x h bytes (the red channel of the RGB read). */
struct timg_mask {
    int w, h;
    uint8_t *v;
};

static inline struct timg_mask timg_read_mask(const char *path)
{
    struct vio_image *img = NULL;
    vr_err e = { 0 };
    cr_assert_eq(vio_image_read(path, &img, &e), 0, "%s", e.msg);
    struct timg_mask m = { img->w, img->h, malloc((size_t)img->w * img->h) };
    for (int y = 0; y < img->h; y++)
        for (int x = 0; x < img->w; x++)
            m.v[y * img->w + x] = img->data[(size_t)y * img->linesize + 3 * x];
    vio_image_free(&img);
    return m;
}

/* Mean of the mask over [x0,x1) x [y0,y1), in [0,255]. */
static inline double timg_mean(const struct timg_mask *m, int x0, int y0, int x1, int y1)
{
    double s = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            s += m->v[y * m->w + x];
    return s / ((double)(x1 - x0) * (y1 - y0));
}

#endif
