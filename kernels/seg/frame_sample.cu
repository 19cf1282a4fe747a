/*
 * frame_sample.cu - the CUDA frame kernels that read the frame itself:
 * preprocess (colour conversion + resize + normalise into the network's
 * NHWC batch, for every tile of every eye of every frame in one launch),
 * luma at work size (the guided filter's guide), and the refinement that
 * writes the output masks (guided apply or bilinear upsample, fused with the
 * over all frames of a call; the temporal filter is frame_temporal.cu). The C twins are in
 * frame_sample_ref.c; frame_ref.h spells out the sampling rules followed here.
 *
 * Frames come as NVDEC leaves them (NV12, P010 planes in device memory) or
 * as RGB24 / YUV420P; the pixel format is a template parameter so the inner
 * loops carry no format switch. One thread per output pixel (preprocess,
 * luma) or per 4 horizontally adjacent output pixels (refine, so the mask is
 * written in 32-bit words); neighbouring threads read neighbouring source
 * pixels, so the box reads coalesce. The per-pixel colour and box-sum
 * helpers are in frame_pixel.cuh; NV12 boxes read as 32-bit words (the 8K
 * case, 2x fewer instructions) in frame_words.cuh.
 */
#include "frame_words.cuh"

#include <cuda_runtime.h>
#include <string.h>

/* RGB of rect r resampled to dw x dh at output pixel (ox, oy). */
template <int FMT>
static __device__ __forceinline__ void sample_rgb(const fview &f, frame_rect r, int dw,
                                                  int dh, bool area, int ox, int oy,
                                                  float v[3])
{
    if (area) {
        int x0, x1, y0, y1;
        area_span(ox, r.w, dw, x0, x1);
        area_span(oy, r.h, dh, y0, y1);
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
        if (FMT == SEG_PIX_RGB24) {
            for (int y = y0; y < y1; y++)
                for (int x = x0; x < x1; x++) {
                    float a, b, c;
                    rgb_at<FMT>(f, r.x + x, r.y + y, a, b, c);
                    s0 += a;
                    s1 += b;
                    s2 += c;
                }
        } else if (FMT == SEG_PIX_NV12 && x1 - x0 <= NV12_MAX_BOX && nv12_words_ok(f)) {
            /* the narrowest window that holds every box of r: one branch
             * for the whole block */
            const int np = window_pixels(r.x, r.w, dw);
            const int a = r.x + x0, b = r.x + x1, c = r.y + y0, d = r.y + y1;
            if (np <= 13)
                area_sum_nv12<13, false>(f, a, b, c, d, s0, s1, s2);
            else if (np <= 16)
                area_sum_nv12<16, false>(f, a, b, c, d, s0, s1, s2);
            else
                area_sum_nv12<4 * NV12_WORDS, false>(f, a, b, c, d, s0, s1, s2);
        } else {
            area_sum_yuv<FMT>(f, r.x + x0, r.x + x1, r.y + y0, r.y + y1, s0, s1, s2);
        }
        float inv = 1.0f / (float)((x1 - x0) * (y1 - y0));
        v[0] = s0 * inv;
        v[1] = s1 * inv;
        v[2] = s2 * inv;
        return;
    }
    int xa, xb, ya, yb;
    float tx, ty;
    fcu_taps(ox, r.w, dw, &xa, &xb, &tx);
    fcu_taps(oy, r.h, dh, &ya, &yb, &ty);
    float q[4][3];
    rgb_at<FMT>(f, r.x + xa, r.y + ya, q[0][0], q[0][1], q[0][2]);
    rgb_at<FMT>(f, r.x + xb, r.y + ya, q[1][0], q[1][1], q[1][2]);
    rgb_at<FMT>(f, r.x + xa, r.y + yb, q[2][0], q[2][1], q[2][2]);
    rgb_at<FMT>(f, r.x + xb, r.y + yb, q[3][0], q[3][1], q[3][2]);
#pragma unroll
    for (int c = 0; c < 3; c++) {
        float top = fcu_lerp(q[0][c], q[1][c], tx);
        float bot = fcu_lerp(q[2][c], q[3][c], tx);
        v[c] = fcu_lerp(top, bot, ty);
    }
}

/* Luma of rect r resampled to dw x dh at output pixel (ox, oy). */
template <int FMT>
static __device__ __forceinline__ float sample_luma(const fview &f, frame_rect r, int dw,
                                                    int dh, bool area, int ox, int oy)
{
    if (area) {
        int x0, x1, y0, y1;
        area_span(ox, r.w, dw, x0, x1);
        area_span(oy, r.h, dh, y0, y1);
        float s = 0.0f;
        if (FMT == SEG_PIX_NV12 && x1 - x0 <= NV12_MAX_BOX && luma_words_ok(f))
            s = luma_box_nv12(f, r.x + x0, r.x + x1, r.y + y0, r.y + y1);
        else
            for (int y = y0; y < y1; y++)
                for (int x = x0; x < x1; x++)
                    s += luma_at<FMT>(f, r.x + x, r.y + y);
        return s * (1.0f / (float)((x1 - x0) * (y1 - y0)));
    }
    int xa, xb, ya, yb;
    float tx, ty;
    fcu_taps(ox, r.w, dw, &xa, &xb, &tx);
    fcu_taps(oy, r.h, dh, &ya, &yb, &ty);
    float top = fcu_lerp(luma_at<FMT>(f, r.x + xa, r.y + ya), luma_at<FMT>(f, r.x + xb, r.y + ya), tx);
    float bot = fcu_lerp(luma_at<FMT>(f, r.x + xa, r.y + yb), luma_at<FMT>(f, r.x + xb, r.y + yb), tx);
    return fcu_lerp(top, bot, ty);
}

/* ---- (1) preprocess ---- */

/* The eye whose whole pass (its last tile, the eye itself) is tile t, or
 * -1. */
static __device__ __forceinline__ int whole_pass_eye(const frame_cu_plan &p, int t)
{
    for (int e = 0; e < p.n_eyes; e++)
        if (t == p.e[e].tile0 + p.e[e].ntiles - 1)
            return e;
    return -1;
}

/* Output pixel (ox, oy) of eye e's whole pass and the 2x2 guide lumas
 * under it (frame_luma_folds' geometry: 16-pixel-wide boxes, work images
 * twice the tile): the lumas are k_luma's to the bit, read in the same
 * pass as the colours when the frame takes NV12 words. */
template <int FMT>
static __device__ __forceinline__ void fold_pixel(const fview &f, const frame_cu_eye &e,
                                                  int mw, int mh, int ox, int oy, float v[3],
                                                  float l4[4])
{
    const frame_rect r = e.eye;
    if (FMT == SEG_PIX_NV12 && nv12_words_ok(f)) {
        const int bh = r.h / mh, x0 = r.x + NV12_FOLD_BOX * ox, y0 = r.y + bh * oy;
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
        area_sum_nv12<NV12_FOLD_BOX, true>(f, x0, x0 + NV12_FOLD_BOX, y0, y0 + bh, s0, s1,
                                           s2, l4, bh / 2);
        const float inv = 1.0f / (float)(NV12_FOLD_BOX * bh);
        const float linv = 1.0f / (float)(NV12_FOLD_BOX / 2 * (bh / 2));
        v[0] = s0 * inv;
        v[1] = s1 * inv;
        v[2] = s2 * inv;
#pragma unroll
        for (int q = 0; q < 4; q++)
            l4[q] *= linv;
        return;
    }
    sample_rgb<FMT>(f, r, mw, mh, true, ox, oy, v);
#pragma unroll
    for (int q = 0; q < 4; q++)
        l4[q] = sample_luma<FMT>(f, r, e.work_w, e.work_h, true, 2 * ox + (q & 1),
                                 2 * oy + (q >> 1));
}

/* grid: x = pixels of one tile / block, y = tile, z = frame. luma: the
 * guide's lumas (work layout) of the frame_luma_folds plan p, written with
 * each eye's whole pass; NULL: none. */
template <int FMT>
__global__ void __launch_bounds__(256)
k_preprocess(const __grid_constant__ frame_batch fb, const frame_rect *__restrict__ rects,
             const __grid_constant__ frame_cu_plan p, int tpf, int mw, int mh,
             float *__restrict__ out, float *__restrict__ luma)
{
    const int pix = blockIdx.x * blockDim.x + threadIdx.x;
    if (pix >= mw * mh)
        return;
    const int tile = blockIdx.y, fr = blockIdx.z;
    const fview f = fview_of(fb, fr);
    const int ox = pix % mw, oy = pix / mw;
    const int fe = luma ? whole_pass_eye(p, tile) : -1;
    float v[3];
    if (fe >= 0) {
        const frame_cu_eye &e = p.e[fe];
        float l4[4];
        fold_pixel<FMT>(f, e, mw, mh, ox, oy, v, l4);
        float *l = luma + (size_t)fr * p.work_per_frame + e.work_off
                   + (size_t)2 * oy * e.work_w + 2 * ox;
        *(float2 *)l = make_float2(l4[0], l4[1]);
        *(float2 *)(l + e.work_w) = make_float2(l4[2], l4[3]);
    } else {
        const frame_rect r = rects[tile];
        sample_rgb<FMT>(f, r, mw, mh, is_area(r.w, r.h, mw, mh), ox, oy, v);
    }
    float *o = out + (((size_t)fr * tpf + tile) * mw * mh + pix) * 3;
    o[0] = v[0];
    o[1] = v[1];
    o[2] = v[2];
}

#define FMT_DISPATCH(fmt, KERNEL, ...)                                              \
    switch (fmt) {                                                                  \
    case SEG_PIX_RGB24: KERNEL<SEG_PIX_RGB24><<<__VA_ARGS__; break;                 \
    case SEG_PIX_NV12: KERNEL<SEG_PIX_NV12><<<__VA_ARGS__; break;                   \
    case SEG_PIX_P010: KERNEL<SEG_PIX_P010><<<__VA_ARGS__; break;                   \
    default: KERNEL<SEG_PIX_YUV420P><<<__VA_ARGS__; break;                          \
    }

extern "C" int frame_luma_folds(const struct frame_cu_plan *p, const struct frame_rect *rects,
                                int mw, int mh)
{
    if (p->n_eyes < 1)
        return 0;
    for (int i = 0; i < p->n_eyes; i++) {
        const struct frame_cu_eye *e = &p->e[i];
        const struct frame_rect *w = &rects[e->tile0 + e->ntiles - 1], E = e->eye;
        const int bh = E.h / mh;
        if (e->ntiles < 1 || w->x != E.x || w->y != E.y || w->w != E.w || w->h != E.h
            || E.w != NV12_FOLD_BOX * mw || E.h != bh * mh || bh % 4 || E.x % 4 || E.y % 2
            || e->work_w != 2 * mw || e->work_h != 2 * mh)
            return 0;
    }
    return 1;
}

extern "C" int frame_preprocess_fold_batch_cuda(const struct frame_batch *fb,
                                                const struct frame_rect *rects,
                                                const struct frame_cu_plan *p, int mw, int mh,
                                                float *out, float *luma, cudaStream_t st,
                                                vr_err *err)
{
    const int tpf = p->tiles_per_frame;
    if (fb->n < 1 || fb->n > FRAME_CU_MAX_FRAMES || tpf < 1 || mw < 1 || mh < 1)
        return vr_err_set(err, VR_EINVAL, "preprocess: %d frames x %d tiles of %dx%d",
                          fb->n, tpf, mw, mh);
    dim3 grid((mw * mh + 255) / 256, tpf, fb->n);
    FMT_DISPATCH(fb->fmt, k_preprocess, grid, 256, 0, st>>>(*fb, rects, *p, tpf, mw, mh, out,
                                                             luma));
    return fcu_check("preprocess", err);
}

extern "C" int frame_preprocess_batch_cuda(const struct frame_batch *fb,
                                           const struct frame_rect *rects,
                                           int tiles_per_frame, int mw, int mh, float *out,
                                           cudaStream_t st, vr_err *err)
{
    struct frame_cu_plan p;
    memset(&p, 0, sizeof p);
    p.tiles_per_frame = tiles_per_frame;
    return frame_preprocess_fold_batch_cuda(fb, rects, &p, mw, mh, out, NULL, st, err);
}

/* ---- luma at work size ---- */

/* grid: x = work pixels / block, y = eye, z = frame. */
template <int FMT>
__global__ void __launch_bounds__(256)
k_luma(const __grid_constant__ frame_batch fb, const __grid_constant__ frame_cu_plan p,
       float *__restrict__ out)
{
    const frame_cu_eye &e = p.e[blockIdx.y];
    const int pix = blockIdx.x * blockDim.x + threadIdx.x;
    if (pix >= e.work_w * e.work_h)
        return;
    const int fr = blockIdx.z;
    const fview f = fview_of(fb, fr);
    const int ox = pix % e.work_w, oy = pix / e.work_w;
    out[(size_t)fr * p.work_per_frame + e.work_off + pix] =
        sample_luma<FMT>(f, e.eye, e.work_w, e.work_h,
                         is_area(e.eye.w, e.eye.h, e.work_w, e.work_h), ox, oy);
}

extern "C" int frame_luma_batch_cuda(const struct frame_batch *fb,
                                     const struct frame_cu_plan *p, float *out,
                                     cudaStream_t st, vr_err *err)
{
    dim3 grid((p->max_work + 255) / 256, p->n_eyes, fb->n);
    FMT_DISPATCH(fb->fmt, k_luma, grid, 256, 0, st>>>(*fb, *p, out));
    return fcu_check("luma", err);
}

/* ---- (3) refine, over the frames of a call ---- */

#define RPX 4 /* output pixels per thread, one 32-bit store */

/* Whether the RPX area boxes [x0[k], x1[k]) are 2 pixels wide and side by
 * side (the 2:1 shrink of an 8K side-by-side frame's eyes): then they cover
 * 2 * RPX consecutive pixels, two aligned words a row (luma_pairs_nv12). */
static __device__ __forceinline__ bool boxes_paired(const int x0[RPX], const int x1[RPX])
{
    bool ok = true;
#pragma unroll
    for (int k = 0; k < RPX; k++)
        ok = ok && x0[k] == x0[0] + 2 * k && x1[k] == x0[k] + 2;
    return ok;
}

/* The luma sums of RPX output pixels whose boxes boxes_paired accepts:
 * frame pixels [x, x + 2 * RPX) of rows [y0, y1), x a multiple of 4 in a
 * plane luma_words_ok accepts. Bit for bit the byte loop of k_refine (the
 * same terms in the same order per sum), from RPX / 2 words a row instead
 * of 2 * RPX byte loads. */
static __device__ __forceinline__ void luma_pairs_nv12(const fview &f, int x, int y0, int y1,
                                                       float s[RPX])
{
    const luma_range lr = luma_range_of(f);
#pragma unroll
    for (int k = 0; k < RPX; k++)
        s[k] = 0.0f;
    const uint32_t *row = (const uint32_t *)(f.d0 + (size_t)y0 * f.l0 + x);
    for (int y = y0; y < y1; y++, row = (const uint32_t *)((const uint8_t *)row + f.l0)) {
        uint32_t w[RPX / 2];
#pragma unroll
        for (int i = 0; i < RPX / 2; i++)
            w[i] = __ldg(row + i);
#pragma unroll
        for (int j = 0; j < 2 * RPX; j++)
            s[j >> 1] += luma_term(byte_2p23(w[j >> 2], j & 3), lr);
    }
}

/* The mask byte of value v, fcu_to_u8's, as the low byte of a word (the
 * other bytes junk): the clamped x in [0, 255] plus 2^23 rounded toward
 * zero is 2^23 + trunc(x) exactly, so its low byte is __float2uint_rz(x),
 * with a full-rate FADD for the quarter-rate F2I. */
static __device__ __forceinline__ uint32_t refine_u8(float v)
{
    const float x = fminf(fmaxf(__fadd_rn(__fmul_rn(v, 255.0f), 0.5f), 0.0f), 255.0f);
    return __float_as_uint(__fadd_rz(x, 8388608.0f));
}

/* The mask byte of output pixel k: a (and b, I) as fcu_lerp gave them. */
template <bool GUIDED>
static __device__ __forceinline__ uint32_t refine_px(float av, float bv, float I)
{
    return GUIDED ? refine_u8(__fadd_rn(__fmul_rn(av, I), bv)) : refine_u8(av);
}

/* Tap patterns of a quad the apply reads from a window of columns: pixel k
 * lerps columns c + L[k] and c + L[k] + 1 (c = its first pixel's left tap,
 * no tap clamped at the right edge). QUAD_GENERAL: any other quad. The
 * interior quads of the exact upsamplings by 8 (and more), 4 and 2. */
enum { QUAD_GENERAL, QUAD_0000, QUAD_0011, QUAD_0112 };

/* The pattern of a quad's taps xa, xb (all RPX pixels in the image). */
static __device__ __forceinline__ int quad_pattern(const int xa[RPX], const int xb[RPX])
{
    bool inner = true;
#pragma unroll
    for (int k = 0; k < RPX; k++)
        inner = inner && xb[k] == xa[k] + 1;
    if (!inner)
        return QUAD_GENERAL;
    const int l1 = xa[1] - xa[0], l2 = xa[2] - xa[0], l3 = xa[3] - xa[0];
    if (l1 == 0 && l2 == 0 && l3 == 0)
        return QUAD_0000;
    if (l1 == 0 && l2 == 1 && l3 == 1)
        return QUAD_0011;
    if (l1 == 1 && l2 == 1 && l3 == 2)
        return QUAD_0112;
    return QUAD_GENERAL;
}

/* The RPX mask bytes (refine_px) of a quad of pattern (0, L1, L2, L3):
 * rows a0, a1 (b0, b1) of a (b) from the window's first column c. Each
 * distinct tap is loaded once (L3 + 2 a row) and indexed at compile time;
 * the fcu_lerp calls are the general path's, on the same values in the
 * same order (pixels sharing taps share the lerp's subtraction). */
template <bool GUIDED, int L1, int L2, int L3>
static __device__ __forceinline__ void apply_quad(const float *a0, const float *a1,
                                                  const float *b0, const float *b1,
                                                  const float tx[RPX], float ty,
                                                  const float I[RPX], uint32_t v[RPX])
{
    constexpr int NC = L3 + 2, L[RPX] = { 0, L1, L2, L3 };
    float ca0[NC], ca1[NC], cb0[NC], cb1[NC];
#pragma unroll
    for (int j = 0; j < NC; j++) {
        ca0[j] = __ldg(a0 + j);
        ca1[j] = __ldg(a1 + j);
        if (GUIDED) {
            cb0[j] = __ldg(b0 + j);
            cb1[j] = __ldg(b1 + j);
        }
    }
#pragma unroll
    for (int k = 0; k < RPX; k++) {
        const int l = L[k];
        const float at = fcu_lerp(ca0[l], ca0[l + 1], tx[k]);
        const float ab = fcu_lerp(ca1[l], ca1[l + 1], tx[k]);
        const float av = fcu_lerp(at, ab, ty);
        float bv = 0.0f;
        if (GUIDED) {
            const float bt = fcu_lerp(cb0[l], cb0[l + 1], tx[k]);
            const float bb = fcu_lerp(cb1[l], cb1[l + 1], tx[k]);
            bv = fcu_lerp(bt, bb, ty);
        }
        v[k] = refine_px<GUIDED>(av, bv, I[k]);
    }
}

/* grid: x = groups of RPX pixels of a row / block, y = output row, z = eye.
 * Each thread walks the frames of the call, reusing its taps. */
template <int FMT, bool GUIDED>
__global__ void __launch_bounds__(128)
k_refine(const float *__restrict__ a, const float *__restrict__ b,
         const __grid_constant__ frame_batch fb, const __grid_constant__ frame_cu_plan p,
         const __grid_constant__ frame_masks m)
{
    const frame_cu_eye &e = p.e[blockIdx.z];
    const int dw = e.out.w, dh = e.out.h, w = e.work_w, h = e.work_h;
    const int oy = blockIdx.y;
    const int ox0 = (blockIdx.x * blockDim.x + threadIdx.x) * RPX;
    if (oy >= dh || ox0 >= dw)
        return;
    const int np = dw - ox0 < RPX ? dw - ox0 : RPX;

    /* taps into the work images, shared by all frames */
    int ya, yb;
    float ty;
    fcu_taps(oy, h, dh, &ya, &yb, &ty);
    int xa[RPX], xb[RPX];
    float tx[RPX];
#pragma unroll
    for (int k = 0; k < RPX; k++)
        fcu_taps(ox0 + (k < np ? k : 0), w, dw, &xa[k], &xb[k], &tx[k]);

    const bool area = is_area(e.eye.w, e.eye.h, dw, dh);
    const bool direct = e.eye.w == dw && e.eye.h == dh;
    /* where each output pixel samples the frame's luma: the same for every
     * frame, so computed once (area boxes, or bilinear taps) */
    int lx0[RPX], lx1[RPX], ly0 = 0, ly1 = 0;
    float ltx[RPX], lty = 0.0f, linv[RPX]; /* linv: 1 / pixels of an area box */
    if (GUIDED && !direct) {
        if (area)
            area_span(oy, e.eye.h, dh, ly0, ly1);
        else
            fcu_taps(oy, e.eye.h, dh, &ly0, &ly1, &lty);
#pragma unroll
        for (int k = 0; k < RPX; k++) {
            const int ox = ox0 + (k < np ? k : 0);
            if (area) {
                area_span(ox, e.eye.w, dw, lx0[k], lx1[k]);
                linv[k] = 1.0f / (float)((lx1[k] - lx0[k]) * (ly1 - ly0));
            } else {
                fcu_taps(ox, e.eye.w, dw, &lx0[k], &lx1[k], &ltx[k]);
            }
        }
    }
    /* quads of a known tap pattern read a window of columns (apply_quad);
     * a warp whose quads differ takes the general path as a whole */
    int pat = np == RPX ? quad_pattern(xa, xb) : QUAD_GENERAL;
    {
        int same;
        __match_all_sync(__activemask(), pat, &same);
        pat = same ? pat : QUAD_GENERAL;
    }
    /* NV12 boxes read by words where every frame of the call allows */
    const bool paired = FMT == SEG_PIX_NV12 && GUIDED && area && np == RPX &&
                        boxes_paired(lx0, lx1) && ((e.eye.x + lx0[0]) & 3) == 0;
    for (int fr = 0; fr < fb.n; fr++) {
        const fview f = fview_of(fb, fr);
        const size_t base = (size_t)fr * p.work_per_frame + e.work_off;
        const float *a0 = a + base + (size_t)ya * w, *a1 = a + base + (size_t)yb * w;
        const float *b0 = b + base + (size_t)ya * w, *b1 = b + base + (size_t)yb * w;
        /* rows and taps opaque, per frame: each tap's address is then one
         * IMAD.WIDE off its row (not a 64-bit index shared by a and b, or
         * 64-bit taps held across the frames, 27 more registers) */
        static_assert(RPX == 4, "the asm below names each tap");
        int ia[RPX], ib[RPX];
#pragma unroll
        for (int k = 0; k < RPX; k++) {
            ia[k] = xa[k];
            ib[k] = xb[k];
        }
        asm("" : "+l"(a0), "+l"(a1), "+l"(b0), "+l"(b1), "+r"(ia[0]), "+r"(ia[1]), "+r"(ia[2]),
                 "+r"(ia[3]), "+r"(ib[0]), "+r"(ib[1]), "+r"(ib[2]), "+r"(ib[3]));
        /* the guide: the frame's luma at each output pixel */
        float I[RPX] = {};
        if (GUIDED && paired && luma_words_ok(f)) {
            luma_pairs_nv12(f, e.eye.x + lx0[0], e.eye.y + ly0, e.eye.y + ly1, I);
#pragma unroll
            for (int k = 0; k < RPX; k++)
                I[k] *= linv[k];
        } else if (GUIDED) {
#pragma unroll
            for (int k = 0; k < RPX; k++) {
                const int ox = ox0 + (k < np ? k : 0);
                if (direct) {
                    I[k] = luma_at<FMT>(f, e.eye.x + ox, e.eye.y + oy);
                } else if (area) {
                    float sum = 0.0f;
                    for (int y = ly0; y < ly1; y++)
                        for (int x = lx0[k]; x < lx1[k]; x++)
                            sum += luma_at<FMT>(f, e.eye.x + x, e.eye.y + y);
                    I[k] = sum * linv[k];
                } else {
                    const int X = e.eye.x, Y = e.eye.y;
                    float top = fcu_lerp(luma_at<FMT>(f, X + lx0[k], Y + ly0),
                                         luma_at<FMT>(f, X + lx1[k], Y + ly0), ltx[k]);
                    float bot = fcu_lerp(luma_at<FMT>(f, X + lx0[k], Y + ly1),
                                         luma_at<FMT>(f, X + lx1[k], Y + ly1), ltx[k]);
                    I[k] = fcu_lerp(top, bot, lty);
                }
            }
        }
        uint32_t v[RPX]; /* mask bytes in the low bytes */
        if (pat == QUAD_0011) {
            apply_quad<GUIDED, 0, 1, 1>(a0 + ia[0], a1 + ia[0], b0 + ia[0], b1 + ia[0], tx, ty,
                                        I, v);
        } else if (pat == QUAD_0000) {
            apply_quad<GUIDED, 0, 0, 0>(a0 + ia[0], a1 + ia[0], b0 + ia[0], b1 + ia[0], tx, ty,
                                        I, v);
        } else if (pat == QUAD_0112) {
            apply_quad<GUIDED, 1, 1, 2>(a0 + ia[0], a1 + ia[0], b0 + ia[0], b1 + ia[0], tx, ty,
                                        I, v);
        } else {
#pragma unroll
            for (int k = 0; k < RPX; k++) {
                float at = fcu_lerp(__ldg(a0 + ia[k]), __ldg(a0 + ib[k]), tx[k]);
                float ab = fcu_lerp(__ldg(a1 + ia[k]), __ldg(a1 + ib[k]), tx[k]);
                float av = fcu_lerp(at, ab, ty), bv = 0.0f;
                if (GUIDED) {
                    float bt = fcu_lerp(__ldg(b0 + ia[k]), __ldg(b0 + ib[k]), tx[k]);
                    float bb = fcu_lerp(__ldg(b1 + ia[k]), __ldg(b1 + ib[k]), tx[k]);
                    bv = fcu_lerp(bt, bb, ty);
                }
                v[k] = refine_px<GUIDED>(av, bv, I[k]);
            }
        }
        uint8_t *dst = m.data[fr] + (size_t)(e.out.y + oy) * m.linesize[fr] + e.out.x + ox0;
        if (np == RPX && ((uintptr_t)dst & 3) == 0)
            *(uint32_t *)dst = __byte_perm(__byte_perm(v[0], v[1], 0x0040),
                                           __byte_perm(v[2], v[3], 0x0040), 0x5410);
        else
            for (int k = 0; k < np; k++)
                dst[k] = (uint8_t)v[k];
    }
}

template <bool G>
static void launch_refine(int fmt, dim3 grid, int threads, cudaStream_t st, const float *a,
                          const float *b, const frame_batch &fb, const frame_cu_plan &p,
                          const frame_masks &m)
{
    switch (fmt) {
    case SEG_PIX_RGB24:
        k_refine<SEG_PIX_RGB24, G><<<grid, threads, 0, st>>>(a, b, fb, p, m);
        break;
    case SEG_PIX_NV12:
        k_refine<SEG_PIX_NV12, G><<<grid, threads, 0, st>>>(a, b, fb, p, m);
        break;
    case SEG_PIX_P010:
        k_refine<SEG_PIX_P010, G><<<grid, threads, 0, st>>>(a, b, fb, p, m);
        break;
    default:
        k_refine<SEG_PIX_YUV420P, G><<<grid, threads, 0, st>>>(a, b, fb, p, m);
        break;
    }
}

extern "C" int frame_refine_batch_cuda(const float *a, const float *b, int guided,
                                       const struct frame_batch *fb,
                                       const struct frame_cu_plan *p,
                                       const struct frame_masks *masks, cudaStream_t st,
                                       vr_err *err)
{
    int max_w = 0, max_h = 0;
    for (int i = 0; i < p->n_eyes; i++) {
        max_w = p->e[i].out.w > max_w ? p->e[i].out.w : max_w;
        max_h = p->e[i].out.h > max_h ? p->e[i].out.h : max_h;
    }
    if (max_h > 65535)
        return vr_err_set(err, VR_EINVAL, "refine: %d rows", max_h);
    const int threads = 128;
    dim3 grid((max_w + threads * RPX - 1) / (threads * RPX), max_h, p->n_eyes);
    if (guided)
        launch_refine<true>(fb->fmt, grid, threads, st, a, b, *fb, *p, *masks);
    else
        launch_refine<false>(fb->fmt, grid, threads, st, a, b, *fb, *p, *masks);
    return fcu_check("refine", err);
}

/* ---- twins (one frame) ---- */

extern "C" void frame_batch_one(struct frame_batch *fb, const struct seg_frame *f)
{
    fb->n = 1;
    fb->fmt = f->fmt;
    fb->full_range = f->full_range;
    for (int i = 0; i < 3; i++) {
        fb->data[0][i] = f->data[i];
        fb->linesize[0][i] = f->linesize[i];
    }
}

extern "C" int frame_preprocess_cuda(const struct seg_frame *f, const struct frame_rect *rects,
                                     int n, int mw, int mh, float *out, cudaStream_t st,
                                     vr_err *err)
{
    struct frame_batch fb;
    frame_batch_one(&fb, f);
    return frame_preprocess_batch_cuda(&fb, rects, n, mw, mh, out, st, err);
}

/* A one-eye plan whose eye is `rect` and whose work (or output) is dw x dh. */
static void one_eye(struct frame_cu_plan *p, struct frame_rect rect, int ww, int wh,
                    int dw, int dh)
{
    memset(p, 0, sizeof *p);
    p->n_eyes = 1;
    p->e[0].eye = rect;
    p->e[0].out = (struct frame_rect){ 0, 0, dw, dh };
    p->e[0].work_w = ww;
    p->e[0].work_h = wh;
    p->work_per_frame = (size_t)ww * wh;
    p->max_work = ww * wh;
    p->max_out = dw * dh;
}

extern "C" int frame_luma_cuda(const struct seg_frame *f, struct frame_rect rect, int dw,
                               int dh, float *out, cudaStream_t st, vr_err *err)
{
    struct frame_batch fb;
    struct frame_cu_plan p;
    frame_batch_one(&fb, f);
    one_eye(&p, rect, dw, dh, dw, dh);
    return frame_luma_batch_cuda(&fb, &p, out, st, err);
}

extern "C" int frame_guided_apply_cuda(const float *a, const float *b, int w, int h,
                                       const struct seg_frame *f, struct frame_rect rect,
                                       uint8_t *dst, int dst_linesize, int dw, int dh,
                                       cudaStream_t st, vr_err *err)
{
    struct frame_batch fb;
    struct frame_cu_plan p;
    struct frame_masks m;
    frame_batch_one(&fb, f);
    one_eye(&p, rect, w, h, dw, dh);
    m.data[0] = dst;
    m.linesize[0] = dst_linesize;
    return frame_refine_batch_cuda(a, b, 1, &fb, &p, &m, st, err);
}

extern "C" int frame_upsample_bilinear_cuda(const float *mask, int w, int h, uint8_t *dst,
                                            int dst_linesize, int dw, int dh,
                                            cudaStream_t st, vr_err *err)
{
    /* the bilinear path reads no frame: a dummy RGB24 view of the right size */
    struct frame_batch fb;
    struct frame_cu_plan p;
    struct frame_masks m;
    memset(&fb, 0, sizeof fb);
    fb.n = 1;
    fb.fmt = SEG_PIX_RGB24;
    one_eye(&p, (struct frame_rect){ 0, 0, dw, dh }, w, h, dw, dh);
    m.data[0] = dst;
    m.linesize[0] = dst_linesize;
    return frame_refine_batch_cuda(mask, mask, 0, &fb, &p, &m, st, err);
}

/* ---- plan view ---- */

extern "C" void frame_cu_plan_make(const struct tile_plan *tp, struct frame_cu_plan *p)
{
    memset(p, 0, sizeof *p);
    p->n_eyes = tp->n_eyes;
    for (int i = 0; i < tp->n_eyes; i++) {
        const struct tile_eye *te = &tp->eye[i];
        struct frame_cu_eye *e = &p->e[i];
        e->eye = te->eye;
        e->out = te->out;
        e->work_w = te->work_w;
        e->work_h = te->work_h;
        e->tile0 = p->tiles_per_frame;
        e->ntiles = te->n;
        e->work_off = p->work_per_frame;
        p->tiles_per_frame += te->n;
        p->work_per_frame += (size_t)te->work_w * te->work_h;
        if (te->work_w * te->work_h > p->max_work)
            p->max_work = te->work_w * te->work_h;
        if (te->out.w * te->out.h > p->max_out)
            p->max_out = te->out.w * te->out.h;
    }
}
