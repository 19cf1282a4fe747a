/*
 * util-frame.h - helpers of the frame-kernel and engine GPU tests
 * (tests/gpu/g-seg-*.c): random frames in every pixel format,
 * RGB -> YUV conversion of real images and clips made of one, device copies of host frames, and
 * poisoned device buffers. Header-only (static functions) so each test file
 * stands alone in whichever binary globs tests/gpu/.
 */
#ifndef VR_G_FRAME_UTIL_H
#define VR_G_FRAME_UTIL_H

#include "frame_cuda.h"
#include "vio_image.h"

#include <criterion/criterion.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GF_CUDA(call)                                                              \
    do {                                                                           \
        cudaError_t e_ = (call);                                                   \
        cr_assert(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));     \
    } while (0)

/* xorshift: fresh data every run (seeded from the clock) but reproducible
 * from the seed each test prints. */
static uint64_t gf_rng;
static inline void gf_seed(const char *test)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    gf_rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ 0x9e3779b97f4a7c15ull;
    cr_log_info("%s: seed %llu", test, (unsigned long long)gf_rng);
}
static inline uint32_t gf_u32(void)
{
    gf_rng ^= gf_rng << 13;
    gf_rng ^= gf_rng >> 7;
    gf_rng ^= gf_rng << 17;
    return (uint32_t)(gf_rng >> 16);
}
static inline float gf_unif(float lo, float hi)
{
    return lo + (hi - lo) * (float)(gf_u32() & 0xffffff) / (float)0x1000000;
}
static inline int gf_int(int lo, int hi) /* inclusive */
{
    return lo + (int)(gf_u32() % (uint32_t)(hi - lo + 1));
}

/* A frame with its planes in host memory and a device copy. */
struct gf_frame {
    struct seg_frame host, dev;
    uint8_t *hbuf, *dbuf;
    size_t off[3], bytes;
};

static inline int gf_bpp(int fmt, int plane)
{
    if (fmt == SEG_PIX_RGB24)
        return 3;
    if (fmt == SEG_PIX_P010)
        return plane == 0 ? 2 : 4;
    if (fmt == SEG_PIX_NV12)
        return plane == 0 ? 1 : 2;
    return 1;
}

/* Allocates a w x h frame of `fmt` with padded rows (linesize a random
 * multiple of 64 above the minimum, as decoders give them). */
static inline void gf_frame_alloc(struct gf_frame *g, int fmt, int w, int h, int full_range)
{
    memset(g, 0, sizeof *g);
    int planes = fmt == SEG_PIX_RGB24 ? 1 : fmt == SEG_PIX_YUV420P ? 3 : 2;
    int cw = (w + 1) / 2, ch = (h + 1) / 2;
    for (int p = 0; p < planes; p++) {
        int pw = p == 0 ? w : cw, ph = p == 0 ? h : ch;
        int ls = ((pw * gf_bpp(fmt, p) + 63) / 64 + gf_int(0, 2)) * 64;
        g->host.linesize[p] = ls;
        g->off[p] = g->bytes;
        g->bytes += (size_t)ls * ph;
    }
    g->hbuf = malloc(g->bytes);
    cr_assert(g->hbuf);
    GF_CUDA(cudaMalloc((void **)&g->dbuf, g->bytes));
    g->host.fmt = fmt;
    g->host.w = w;
    g->host.h = h;
    g->host.full_range = full_range;
    g->dev = g->host;
    g->dev.on_device = 1;
    for (int p = 0; p < planes; p++) {
        g->host.data[p] = g->hbuf + g->off[p];
        g->dev.data[p] = g->dbuf + g->off[p];
    }
}

/* Random content: every byte random, P010 samples with zero low bits as
 * P010 has them. */
static inline void gf_frame_random(struct gf_frame *g)
{
    for (size_t i = 0; i < g->bytes; i++)
        g->hbuf[i] = (uint8_t)gf_u32();
    if (g->host.fmt == SEG_PIX_P010)
        for (size_t i = 0; i + 1 < g->bytes; i += 2)
            g->hbuf[i] &= 0xc0;
}

static inline void gf_frame_upload(struct gf_frame *g)
{
    GF_CUDA(cudaMemcpy(g->dbuf, g->hbuf, g->bytes, cudaMemcpyHostToDevice));
}

static inline void gf_frame_free(struct gf_frame *g)
{
    free(g->hbuf);
    cudaFree(g->dbuf);
    memset(g, 0, sizeof *g);
}

/* Fills g (NV12, P010, YUV420P or RGB24, BT.709 limited range) from packed
 * RGB24 `rgb` (w x h, rows of `ls` bytes), chroma averaged over 2x2. */
static inline void gf_frame_from_rgb(struct gf_frame *g, const uint8_t *rgb, int ls)
{
    const int w = g->host.w, h = g->host.h, fmt = g->host.fmt;
    const int k = fmt == SEG_PIX_P010 ? 4 : 1;
    uint8_t **d = (uint8_t **)g->host.data;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *p = rgb + (size_t)y * ls + 3 * x;
            if (fmt == SEG_PIX_RGB24) {
                memcpy(d[0] + (size_t)y * g->host.linesize[0] + 3 * x, p, 3);
                continue;
            }
            float Y = (0.2126f * p[0] + 0.7152f * p[1] + 0.0722f * p[2]) / 255.0f;
            int v = (int)lrintf((16.0f + 219.0f * Y) * k);
            if (fmt == SEG_PIX_P010) {
                uint16_t s = (uint16_t)(v << 6);
                memcpy(d[0] + (size_t)y * g->host.linesize[0] + 2 * x, &s, 2);
            } else {
                d[0][(size_t)y * g->host.linesize[0] + x] = (uint8_t)v;
            }
        }
    if (fmt == SEG_PIX_RGB24)
        return;
    for (int cy = 0; cy < (h + 1) / 2; cy++)
        for (int cx = 0; cx < (w + 1) / 2; cx++) {
            float r = 0, gg = 0, b = 0;
            int n = 0;
            for (int dy = 0; dy < 2; dy++)
                for (int dx = 0; dx < 2; dx++) {
                    int x = 2 * cx + dx, y = 2 * cy + dy;
                    if (x >= w || y >= h)
                        continue;
                    const uint8_t *p = rgb + (size_t)y * ls + 3 * x;
                    r += p[0];
                    gg += p[1];
                    b += p[2];
                    n++;
                }
            r /= 255.0f * n;
            gg /= 255.0f * n;
            b /= 255.0f * n;
            float Y = 0.2126f * r + 0.7152f * gg + 0.0722f * b;
            int u = (int)lrintf((128.0f + 224.0f * (b - Y) / 1.8556f) * k);
            int v = (int)lrintf((128.0f + 224.0f * (r - Y) / 1.5748f) * k);
            if (fmt == SEG_PIX_NV12) {
                uint8_t *o = d[1] + (size_t)cy * g->host.linesize[1] + 2 * cx;
                o[0] = (uint8_t)u;
                o[1] = (uint8_t)v;
            } else if (fmt == SEG_PIX_P010) {
                uint16_t s[2] = { (uint16_t)(u << 6), (uint16_t)(v << 6) };
                memcpy(d[1] + (size_t)cy * g->host.linesize[1] + 4 * cx, s, 4);
            } else {
                d[1][(size_t)cy * g->host.linesize[1] + cx] = (uint8_t)u;
                d[2][(size_t)cy * g->host.linesize[2] + cx] = (uint8_t)v;
            }
        }
}

/* Frame i of a short "clip": the image shifted right by 3*i pixels (edge
 * clamped), placed into each eye of a w x h frame. */
static inline void gf_clip_frame(const struct vio_image *img, int i, int w, int h,
                                 enum seg_layout l, uint8_t *rgb)
{
    int ew = l == SEG_LAYOUT_SBS ? w / 2 : w;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int ex = x >= ew ? x - ew : x;
            int sx = (int)((long long)ex * img->w / ew) - 3 * i;
            int sy = (int)((long long)y * img->h / h);
            sx = sx < 0 ? 0 : sx >= img->w ? img->w - 1 : sx;
            memcpy(rgb + ((size_t)y * w + x) * 3, img->data + (size_t)sy * img->linesize + 3 * sx,
                   3);
        }
}

/* A plan of n_eyes work images of sizes eyes[i] (w, h), one after the
 * other in a frame's work layout (no tiles, no output): what the work
 * mask kernels' batched twins take. */
static inline void gf_work_plan(struct frame_cu_plan *pl, int n_eyes, const int (*eyes)[2])
{
    memset(pl, 0, sizeof *pl);
    pl->n_eyes = n_eyes;
    for (int i = 0; i < n_eyes; i++) {
        pl->e[i].work_w = eyes[i][0];
        pl->e[i].work_h = eyes[i][1];
        pl->e[i].work_off = pl->work_per_frame;
        pl->work_per_frame += (size_t)eyes[i][0] * eyes[i][1];
        if (eyes[i][0] * eyes[i][1] > pl->max_work)
            pl->max_work = eyes[i][0] * eyes[i][1];
    }
}

/* Device buffer of n floats poisoned with NaN (0xff bytes). */
static inline float *gf_dev_poisoned(size_t n)
{
    float *d;
    GF_CUDA(cudaMalloc((void **)&d, n * sizeof *d));
    GF_CUDA(cudaMemset(d, 0xff, n * sizeof *d));
    return d;
}

static inline void *gf_dev_copy(const void *h, size_t bytes)
{
    void *d;
    GF_CUDA(cudaMalloc(&d, bytes));
    GF_CUDA(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* Largest |got - want| over n floats; NaN or Inf anywhere gives INFINITY. */
static inline double gf_max_abs(const float *got, const float *want, size_t n, size_t *where)
{
    double mx = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (!isfinite(got[i]) || !isfinite(want[i]))
            d = INFINITY;
        if (d > mx) {
            mx = d;
            if (where)
                *where = i;
        }
    }
    return mx;
}

/* A host copy (malloc'd) of n device floats, after the device's work. */
static inline float *gf_dev_floats(const float *d, size_t n)
{
    float *h = malloc(n * sizeof *h);
    cr_assert(h);
    GF_CUDA(cudaDeviceSynchronize());
    GF_CUDA(cudaMemcpy(h, d, n * sizeof *h, cudaMemcpyDeviceToHost));
    return h;
}

/* Copies n device floats back and compares. */
static inline double gf_dev_max_abs(const float *d, const float *want, size_t n, size_t *where)
{
    float *h = gf_dev_floats(d, n);
    double r = gf_max_abs(h, want, n, where);
    free(h);
    return r;
}

/* Floats of device `d` whose bits differ from want[0..n); *first: the
 * first of them, *got: its value (both untouched when none differ). */
static inline size_t gf_dev_bits_diff(const float *d, const float *want, size_t n,
                                      size_t *first, float *got)
{
    float *h = gf_dev_floats(d, n);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&h[i], &want[i], sizeof *h) && bad++ == 0) {
            *first = i;
            *got = h[i];
        }
    free(h);
    return bad;
}

/* ---- bit-exact models of the batched NV12 kernels ---- */

/* A plan over eyes eye[0..n) (frame pixels) with outputs out[i] (mask
 * pixels) and work images of ww x wh, laid out as frame_cu_plan_make does. */
static inline void gf_plan(struct frame_cu_plan *p, int n, const struct frame_rect *eye,
                           const struct frame_rect *out, int ww, int wh)
{
    memset(p, 0, sizeof *p);
    p->n_eyes = n;
    for (int i = 0; i < n; i++) {
        p->e[i].eye = eye[i];
        p->e[i].out = out[i];
        p->e[i].work_w = ww;
        p->e[i].work_h = wh;
        p->e[i].work_off = p->work_per_frame;
        p->work_per_frame += (size_t)ww * wh;
        p->max_work = ww * wh;
        if (out[i].w * out[i].h > p->max_out)
            p->max_out = out[i].w * out[i].h;
    }
}

/* A batch of the device copies of frames g[0..n) (one range). */
static inline void gf_batch(struct frame_batch *fb, const struct gf_frame *g, int n)
{
    frame_batch_one(fb, &g[0].dev);
    fb->n = n;
    for (int i = 1; i < n; i++)
        for (int p = 0; p < 3; p++) {
            fb->data[i][p] = g[i].dev.data[p];
            fb->linesize[i][p] = g[i].dev.linesize[p];
        }
}

/* frame_sample_ref.c's area box [*a, *b) of output index o (r pixels onto d). */
static inline void gf_area_span(int o, int r, int d, int *a, int *b)
{
    *a = (int)((long long)o * r / d);
    *b = (int)((long long)(o + 1) * r / d);
    if (*b <= *a)
        *b = *a + 1;
}

/* The mean NV12 luma over the box [x0, x1) x [y0, y1) (frame pixels) with
 * the float operations of frame_sample.cu (luma_at: a multiplication by the
 * range's reciprocal, clamped; the sum in row order; then the reciprocal of
 * the pixel count), so the result must match the GPU's to the bit. */
static inline float gf_nv12_luma_mean(const struct seg_frame *f, int x0, int x1, int y0,
                                      int y1)
{
    float s = 0.0f;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            const float v = f->data[0][(size_t)y * f->linesize[0] + x];
            const float l = f->full_range ? v * (1.0f / 255.0f) : (v - 16.0f) * (1.0f / 219.0f);
            s += l < 0.0f ? 0.0f : (l > 1.0f ? 1.0f : l);
        }
    return s * (1.0f / (float)((x1 - x0) * (y1 - y0)));
}

#endif
