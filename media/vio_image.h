/*
 * vio_image.h - still images in and out for the image path: PNG or JPEG
 * read into packed RGB24 through libavformat/libavcodec/libswscale, and an
 * 8-bit gray mask (or an RGB contact sheet) written as PNG through libavcodec's png encoder.
 *
 * Reading is strict: a missing, empty, truncated or corrupt file, or one
 * that is not a PNG/JPEG, is an error naming the file, never a partial
 * picture. Writing goes to a temporary name renamed into place, so a failed
 * write leaves no output file behind.
 */
#ifndef VR_VIO_IMAGE_H
#define VR_VIO_IMAGE_H

#include "vr_err.h"

#include <stdint.h>

#define VIO_IMAGE_MAX_DIM   16384            /* per side */
#define VIO_IMAGE_MAX_FILE  (256u << 20)      /* bytes of an encoded image */

/* A packed RGB24 picture owned by the struct. */
struct vio_image {
    int w, h;
    int linesize;   /* bytes per row, >= 3*w */
    uint8_t *data;  /* h rows of linesize bytes */
};

/* Reads a PNG or JPEG file. On success *out owns the picture (free with
 * vio_image_free) and 0 is returned; otherwise a VR_E* code (VR_ENOENT
 * missing, VR_EFORMAT not an image / truncated / corrupt, VR_ECODEC decoder
 * failure) with the path in the message, and *out stays NULL. */
int vio_image_read(const char *path, struct vio_image **out, vr_err *err);

/* Allocates a w x h RGB24 picture (contents undefined). */
int vio_image_alloc(int w, int h, struct vio_image **out, vr_err *err);

/* Frees and clears *img; accepts NULL. */
void vio_image_free(struct vio_image **img);

/* Writes w x h 8-bit gray pixels (rows of `linesize` bytes, only read) as a
 * PNG file at `path`: encoded in memory, written to "path.tmp", renamed. */
int vio_image_write_gray_png(const char *path, const uint8_t *data, int w, int h,
                             int linesize, vr_err *err);

/* The same for an RGB24 picture (only read): a contact sheet. */
int vio_image_write_rgb_png(const char *path, const struct vio_image *img, vr_err *err);

/* A contact sheet's overlay pixel: source RGB s under matte a (0..255),
 * the person as it is, the background dimmed and tinted red. */
static inline void vio_overlay_px(uint8_t *out, const uint8_t *s, int a)
{
    for (int k = 0; k < 3; k++) {
        const int bg = k == 0 ? s[k] / 4 + 96 : s[k] / 4;
        out[k] = (uint8_t)((s[k] * a + bg * (255 - a)) / 255);
    }
}

#endif
