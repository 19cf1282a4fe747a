/*
 * frame_temporal.cu - the temporal filter's CUDA twin (frame_temporal.h
 * gives the rule; the C twin is frame_temporal_ref.c).
 *
 * Two kernels per call: the lumas of the batch's frames with each frame's
 * sum of absolute change (integer atomics, so the sums are exact and the
 * same as the C twin's in any order), then the filter, where a thread owns
 * a 4-pixel word and walks the batch's frames in order with the window in
 * registers, deciding cuts from the sums exactly as temporal_cut() does on
 * the host. The engine runs the first beside the network (seg_backend.cu).
 */
#include "frame_temporal.h"

#include "frame_cuda.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>

static int ft_check(const char *what, vr_err *err)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "temporal %s: %s", what, cudaGetErrorString(e));
    return 0;
}

/* ---- lumas and change sums ---- */

struct ft_frames {
    const uint8_t *y0[FRAME_CU_MAX_FRAMES];
    int ls0[FRAME_CU_MAX_FRAMES];
};

/* The luma sample of a source row at column sx (the C twin's rule). */
static __device__ __forceinline__ uint8_t ft_luma(const uint8_t *row, int fmt, int sx)
{
    if (fmt == SEG_PIX_RGB24) {
        const uint8_t *px = row + 3 * (size_t)sx;
        return (uint8_t)((77u * px[0] + 150u * px[1] + 29u * px[2] + 128u) >> 8);
    }
    if (fmt == SEG_PIX_P010)
        return (uint8_t)(((const uint16_t *)row)[sx] >> 8);
    return row[sx];
}

/* A thread owns a quad (4 adjacent pixels) of ft_luma_rows() consecutive
 * rows and walks the batch's frames in order: each frame is one load and
 * one 4-byte store a row, and the previous frame's quads stay in
 * registers (y[j-1] is not read back). A frame's loads of those rows are
 * independent, so they are in flight together. Each warp sums a
 * frame's change with one redux into shared memory (a warp writes its own
 * slots, no atomics); a block then adds each frame's sum with one atomic.
 * The byte-a-thread version (frames outer, rows inner, y[j-1] read back)
 * ran at 23% of the copy bandwidth at 8K.
 *
 * Sizes fit 32-bit math: (2 * 16384 + 1) * 16384 < 2^31; a warp's sum of
 * a frame, 32 * 8 * 4 * 255, fits 32 bits. */
#define FT_LUMA_THREADS 256

/* Rows a thread owns: 8 for the packed sources (64 registers, 4 blocks an
 * SM), 4 for the general path (its loads a sample at a time take more
 * registers: 106 at 8 rows). */
static constexpr __host__ __device__ int ft_luma_rows(int k)
{
    return k > 0 ? 8 : 4;
}

/* SPAN aligned source bytes as words, streamed (read once: evict first). */
template <int SPAN>
struct ft_span {
    uint32_t w[SPAN / 4];
};

template <int SPAN>
static __device__ __forceinline__ ft_span<SPAN> ft_load(const uint8_t *p)
{
    ft_span<SPAN> s;
    if constexpr (SPAN == 4) {
        s.w[0] = __ldcs(reinterpret_cast<const unsigned *>(p));
    } else if constexpr (SPAN == 8) {
        const uint2 v = __ldcs(reinterpret_cast<const uint2 *>(p));
        s.w[0] = v.x;
        s.w[1] = v.y;
    } else {
        static_assert(SPAN == 16, "a quad's source is 4, 8 or 16 bytes");
        const uint4 v = __ldcs(reinterpret_cast<const uint4 *>(p));
        s.w[0] = v.x;
        s.w[1] = v.y;
        s.w[2] = v.z;
        s.w[3] = v.w;
    }
    return s;
}

/* Quad q of a source row at an integer scale K (sw = K * w, so
 * sx = K * x + K / 2) with B bytes a sample (P010: the high byte, at
 * 2 * sx + 1): pixel i's byte is i * K * B + B * (K / 2) + B - 1 of the
 * 4 * K * B bytes from 4 * K * B * q, read with one aligned load. */
template <int B, int K>
static __device__ __forceinline__ uint32_t ft_quad(const uint8_t *row, int q)
{
    constexpr int SPAN = 4 * K * B;
    const ft_span<SPAN> s = ft_load<SPAN>(row + (size_t)SPAN * q);
    uint32_t v = 0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int o = i * K * B + B * (K / 2) + B - 1;
        v |= ((s.w[o / 4] >> 8 * (o % 4)) & 0xffu) << 8 * i;
    }
    return v;
}

/* A quad of y / prev_y: one word where `wide` (w a multiple of 4, the
 * buffer 4-aligned), else its first `cols` bytes (the rest read as 0). */
static __device__ __forceinline__ uint32_t ft_get(const uint8_t *p, int cols, bool wide)
{
    if (wide)
        return *reinterpret_cast<const uint32_t *>(p);
    uint32_t v = 0;
#pragma unroll
    for (int k = 0; k < 4; k++)
        if (k < cols)
            v |= (uint32_t)p[k] << 8 * k;
    return v;
}

static __device__ __forceinline__ void ft_put(uint8_t *p, uint32_t v, int cols, bool wide)
{
    if (wide) {
        *reinterpret_cast<uint32_t *>(p) = v;
        return;
    }
#pragma unroll
    for (int k = 0; k < 4; k++)
        if (k < cols)
            p[k] = (uint8_t)(v >> 8 * k);
}

/* K > 0: ft_quad's packed sources (B = 1: NV12, YUV420P; B = 2: P010);
 * the launcher checks the scale and every row's alignment, and `wide`.
 * K = 0: any format and scale, a sample at a time (ft_luma, the source
 * columns divided once a thread), y in bytes unless `wide`. Pixels past
 * w read as 0 in both frames of a difference, so they add nothing. */
template <int B, int K>
__global__ void __launch_bounds__(FT_LUMA_THREADS, K > 0 ? 4 : 1)
k_temporal_luma(const __grid_constant__ ft_frames f, int n, int fmt, int sw, int sh, int w,
                int h, int wide_rows, uint8_t *__restrict__ y,
                const uint8_t *__restrict__ prev_y, unsigned long long *__restrict__ sad)
{
    constexpr int R = ft_luma_rows(K);
    __shared__ unsigned part[FT_LUMA_THREADS / 32][FRAME_CU_MAX_FRAMES];
    const bool wide = K > 0 || wide_rows;
    const int quads = (w + 3) / 4, t = blockIdx.x * FT_LUMA_THREADS + threadIdx.x;
    const int q = t % quads, x0 = 4 * q, oy0 = t / quads * R;
    const int rows = min(h - oy0, R), cols = min(w - x0, 4); /* rows <= 0: idle */
    const size_t plane = (size_t)w * h, p0 = (size_t)oy0 * w + x0;
    int sx[4], sy[R];
    if constexpr (K == 0) {
#pragma unroll
        for (int k = 0; k < 4; k++)
            sx[k] = k < cols ? ((2 * (x0 + k) + 1) * sw) / (2 * w) : 0;
    }
    uint32_t last[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        sy[r] = r < rows ? ((2 * (oy0 + r) + 1) * sh) / (2 * h) : 0;
        last[r] = r < rows && prev_y ? ft_get(prev_y + p0 + (size_t)r * w, cols, wide) : 0;
    }
    for (int j = 0; j < n; j++) {
        const uint8_t *src = f.y0[j];
        const int ls = f.ls0[j];
        uint32_t cur[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            cur[r] = 0;
            if (r >= rows)
                continue;
            const uint8_t *row = src + (size_t)sy[r] * ls;
            if constexpr (K > 0) {
                cur[r] = ft_quad<B, K>(row, q);
            } else {
#pragma unroll
                for (int k = 0; k < 4; k++)
                    if (k < cols)
                        cur[r] |= (uint32_t)ft_luma(row, fmt, sx[k]) << 8 * k;
            }
        }
        /* frame 0 against prev_y, or against itself when there is none */
        const bool first = j == 0 && !prev_y;
        uint8_t *yj = y + j * plane + p0;
        unsigned d = 0;
#pragma unroll
        for (int r = 0; r < R; r++) {
            if (r >= rows)
                continue;
            ft_put(yj + (size_t)r * w, cur[r], cols, wide);
            d += __vsadu4(cur[r], first ? cur[r] : last[r]);
            last[r] = cur[r];
        }
        d = __reduce_add_sync(0xffffffffu, d);
        if ((threadIdx.x & 31) == 0)
            part[threadIdx.x >> 5][j] = d;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < n; j += FT_LUMA_THREADS) {
        unsigned long long s = 0;
#pragma unroll
        for (int k = 0; k < FT_LUMA_THREADS / 32; k++)
            s += part[k][j];
        if (s)
            atomicAdd(&sad[j], s);
    }
}

typedef void (*ft_luma_kernel)(ft_frames, int, int, int, int, int, int, int, uint8_t *,
                               const uint8_t *, unsigned long long *);

extern "C" int frame_temporal_luma_cuda(const struct temporal_opts *o,
                                        const struct temporal_state *s,
                                        const struct frame_batch *fb, int src_w, int src_h,
                                        uint8_t *y,
                                        const uint8_t *ring_y, unsigned long long *sad,
                                        cudaStream_t st, vr_err *err)
{
    if (fb->n < 1 || fb->n > FRAME_CU_MAX_FRAMES || o->w < 1 || o->h < 1)
        return vr_err_set(err, VR_EINVAL, "temporal: %d frames of %dx%d", fb->n, o->w, o->h);
    ft_frames f;
    for (int j = 0; j < fb->n; j++) {
        f.y0[j] = fb->data[j][0];
        f.ls0[j] = fb->linesize[j][0];
    }
    const uint8_t *prev = s->have > 0 ? ring_y + (size_t)s->head * o->w * o->h : NULL;
    if (cudaMemsetAsync(sad, 0, sizeof *sad * fb->n, st) != cudaSuccess)
        return ft_check("sums", err);
    /* words of y where every row of y and prev starts 4-aligned; packed
     * sources at 1, 2 or 4 source pixels an output pixel (up to 16 bytes
     * a quad) where every frame's rows start aligned to a quad's bytes */
    const int wide = o->w % 4 == 0 && ((uintptr_t)y & 3) == 0 && ((uintptr_t)prev & 3) == 0;
    const int b = fb->fmt == SEG_PIX_P010 ? 2 : 1, k = src_w % o->w ? 0 : src_w / o->w;
    const int span = 4 * k * b;
    int packed = wide && fb->fmt != SEG_PIX_RGB24 && (span == 4 || span == 8 || span == 16);
    for (int j = 0; packed && j < fb->n; j++)
        packed = (uintptr_t)f.y0[j] % span == 0 && f.ls0[j] % span == 0;
    ft_luma_kernel kern = k_temporal_luma<1, 0>;
    if (packed)
        kern = b == 2 ? (k == 1 ? k_temporal_luma<2, 1> : k_temporal_luma<2, 2>)
             : k == 1 ? k_temporal_luma<1, 1>
             : k == 2 ? k_temporal_luma<1, 2>
                      : k_temporal_luma<1, 4>;
    const int rows = ft_luma_rows(packed ? k : 0);
    const long long threads = (long long)((o->w + 3) / 4) * ((o->h + rows - 1) / rows);
    const int blocks = (int)((threads + FT_LUMA_THREADS - 1) / FT_LUMA_THREADS);
    kern<<<blocks, FT_LUMA_THREADS, 0, st>>>(f, fb->n, fb->fmt, src_w, src_h, o->w, o->h, wide,
                                             y, prev, sad);
    return ft_check("luma", err);
}

/* ---- the filter ---- */

struct ft_params {
    float weight[TEMPORAL_MAX_FRAMES];
    unsigned long long cut_sad;
    int still, still_r, slots, have, head, w, h, n;
    int hold, nkeys;                    /* the hold's margin (0 off) and key window */
    uint32_t keys[CONFIG_HOLD_SPAN];
    uint8_t *mask[FRAME_CU_MAX_FRAMES];
    int ls[FRAME_CU_MAX_FRAMES];
};

/* ---- the stillness test on a neighbourhood (still_r > 0) ---- */

/* Pass 1, one thread a pixel: e[j][p] has bit i-1 set when
 * |y_j(p) - y_{j-i}(p)| <= still, for the window's taps i = 1..slots of
 * the batch's frame j. y_{j-i} is the batch's frame j-i, or for j < i the
 * ring's (i-j-1)-th newest frame while the ring holds it (else the bit is
 * 0: frame j never has that tap, as its window holds at most have + j
 * frames). Pass 2 (ft_near, in k_temporal) ANDs the bits over the
 * neighbourhood: all of it within `still` is the C twin's largest change
 * within `still`. The filter kernel rewrites the ring, so the ring's
 * lumas are read here, by a kernel before it. */
__global__ void k_temporal_still(const __grid_constant__ ft_params a,
                                 const uint8_t *__restrict__ y,
                                 const uint8_t *__restrict__ ring_y, uint8_t *__restrict__ e)
{
    const size_t plane = (size_t)a.w * a.h;
    const size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= plane)
        return;
    for (int j = 0; j < a.n; j++) {
        const int yc = y[j * plane + p];
        unsigned bits = 0;
        for (int i = 1; i <= a.slots; i++) {
            int yi;
            if (i <= j)
                yi = y[(j - i) * plane + p];
            else if (i - j - 1 < a.have)
                yi = ring_y[(size_t)((a.head - (i - j - 1) + a.slots) % a.slots) * plane + p];
            else
                continue;
            if (abs(yc - yi) <= a.still)
                bits |= 1u << (i - 1);
        }
        e[j * plane + p] = (uint8_t)bits;
    }
}

/* Pass 2: for each of the V pixels from (px, py), the AND of e_j's bytes
 * over the pixels within still_r (clipped to the plane), as byte k of the
 * word. Outside the plane reads as all bits set (neutral). */
template <int V>
__device__ __forceinline__ uint32_t ft_near(const ft_params &a, const uint8_t *ej, int px,
                                            int py)
{
    constexpr int R = TEMPORAL_STILL_R_MAX, MAXB = V + 2 * R;
    const int r = a.still_r;
    uint32_t acc[V];
#pragma unroll
    for (int k = 0; k < V; k++)
        acc[k] = 0xffu;
    for (int qy = py - r; qy <= py + r; qy++) {
        if (qy < 0 || qy >= a.h)
            continue;
        const uint8_t *row = ej + (size_t)qy * a.w;
        uint32_t b[MAXB];
#pragma unroll
        for (int t = 0; t < MAXB; t++) {
            const int qx = px - r + t;
            b[t] = t < V + 2 * r && qx >= 0 && qx < a.w ? row[qx] : 0xffu;
        }
#pragma unroll
        for (int k = 0; k < V; k++)
#pragma unroll
            for (int t = 0; t <= 2 * R; t++)
                if (t <= 2 * r)
                    acc[k] &= b[k + t];
    }
    uint32_t out = 0;
#pragma unroll
    for (int k = 0; k < V; k++)
        out |= acc[k] << 8 * k;
    return out;
}

/* A thread owns V consecutive pixels of a row (V = 4: every mask, luma
 * and window access one 4-byte word; V = 1 where rows are not 4-aligned)
 * and walks the batch's frames in order. The byte-a-thread version moved
 * 32 bytes a warp instruction and ran at half the copy bandwidth. Each
 * pixel's arithmetic is the C twin's, in its order.
 *
 * The window lives in registers for the batch, newest first (hist[0] =
 * the previous frame): read from the ring once at the start, the frames
 * written back once at the end. Reading and writing the ring at every
 * frame moved 13 bytes a pixel a frame at 4 window frames (117 MB a frame
 * at 8K SBS, 0.048 ms at 80% of the copy bandwidth); now 3 and a share of
 * the ring's 16. */
/* Whether this frame's word and the window's words are all 0 or all 255:
 * then every pixel's output is its input, whichever frames are still. A
 * zero mask sums to 0; at 255, acc = 255 * wsum to within ~16 float
 * roundings (under 1e-6 relative), so acc / wsum + 0.5 truncates to 255.
 * Most of a matte is one or the other, and the filter's arithmetic was
 * the kernel's pace (ncu: ~95 instructions a pixel a frame). */
__device__ __forceinline__ bool ft_uniform(uint32_t raw,
                                           const uint32_t (&hm)[TEMPORAL_MAX_FRAMES - 1],
                                           int have, uint32_t full)
{
    uint32_t any = raw, all = raw;
#pragma unroll
    for (int i = 0; i < TEMPORAL_MAX_FRAMES - 1; i++)
        if (i < have) {
            any |= hm[i];
            all &= hm[i];
        }
    return any == 0 || all == full;
}

/* The filter of one word (V pixels), the C twin's arithmetic in its order. */
template <int V>
__device__ __forceinline__ uint32_t ft_filter(const ft_params &a, uint32_t raw, uint32_t yc,
                                              const uint32_t (&hy)[TEMPORAL_MAX_FRAMES - 1],
                                              const uint32_t (&hm)[TEMPORAL_MAX_FRAMES - 1],
                                              int have, uint32_t still4, uint32_t near)
{
    constexpr int S = TEMPORAL_MAX_FRAMES - 1;
    float acc[V], wsum[V];
#pragma unroll
    for (int k = 0; k < V; k++) {
        acc[k] = (float)((raw >> 8 * k) & 0xffu);
        wsum[k] = 1.0f;
    }
#pragma unroll
    for (int i = 1; i <= S; i++) {
        if (i > have)
            break;
        /* per byte: |yc - y_i| <= still, four at a time (SIMD); on the
         * neighbourhood: bit i-1 of each byte of `near`, as 0 / 0xff */
        const uint32_t still =
            a.still_r > 0   ? ((near >> (i - 1)) & 0x01010101u) * 0xffu
            : a.still >= 0 ? __vcmpleu4(__vabsdiffu4(yc, hy[i - 1]), still4)
                           : 0u;
#pragma unroll
        for (int k = 0; k < V; k++) {
            if (still >> 8 * k & 1u) {
                const float mi = (float)((hm[i - 1] >> 8 * k) & 0xffu);
                acc[k] = __fadd_rn(acc[k], __fmul_rn(a.weight[i], mi));
                wsum[k] = __fadd_rn(wsum[k], a.weight[i]);
            }
        }
    }
    /* 0 / wsum is +0 (wsum >= 1): skipped, as a zero dividend sends the
     * division to its slow path (ncu: every call did, on the mostly-zero
     * masks) */
    uint32_t out = 0;
#pragma unroll
    for (int k = 0; k < V; k++)
        out |= (uint32_t)(int)__fadd_rn(acc[k] != 0.0f ? __fdiv_rn(acc[k], wsum[k]) : 0.0f,
                                        0.5f)
               << 8 * k;
    return out;
}

#define FT_AHEAD 4

/* Frames j0..j0+FT_AHEAD-1 (those < n): mask and luma words at pixel p
 * (row py, column px), and a bit per frame whose change sum is a cut. */
template <typename word>
__device__ __forceinline__ unsigned ft_group(const ft_params &a, const uint8_t *y,
                                             const unsigned long long *sad, int j0,
                                             size_t plane, int p, int px, int py,
                                             uint32_t raws[FT_AHEAD], uint32_t ycs[FT_AHEAD])
{
    unsigned cuts = 0;
#pragma unroll
    for (int q = 0; q < FT_AHEAD; q++)
        if (j0 + q < a.n) {
            raws[q] = *reinterpret_cast<const word *>(a.mask[j0 + q] +
                                                      (size_t)py * a.ls[j0 + q] + px);
            ycs[q] = *reinterpret_cast<const word *>(y + (j0 + q) * plane + p);
            cuts |= (a.cut_sad && sad[j0 + q] > a.cut_sad ? 1u : 0u) << q;
        }
    return cuts;
}

template <int V>
__global__ void __launch_bounds__(256, 4)
k_temporal(const __grid_constant__ ft_params a, const uint8_t *__restrict__ y,
           const unsigned long long *__restrict__ sad, uint8_t *__restrict__ ring_m,
           uint8_t *__restrict__ ring_y, uint8_t *__restrict__ held,
           const uint8_t *__restrict__ e)
{
    /* V pixels as one word; byte k = pixel k (little-endian) */
    typedef typename std::conditional<V == 4, uint32_t, uint8_t>::type word;
    constexpr int S = TEMPORAL_MAX_FRAMES - 1;   /* ring slots at most */
    constexpr uint32_t FULL = V == 4 ? 0xffffffffu : 0xffu;   /* 255 in every byte */
    const int p = (blockIdx.x * blockDim.x + threadIdx.x) * V;
    if (p >= a.w * a.h)
        return;
    const size_t plane = (size_t)a.w * a.h;
    const int px = p % a.w, py = p / a.w;
    int have = a.have;
    /* still as 4 bytes (a difference of bytes is at most 255; below 0
     * nothing is still) */
    const uint32_t still4 = (uint32_t)min(max(a.still, 0), 255) * 0x01010101u;
    uint32_t hy[S], hm[S];
    /* the hold: its margin as 4 bytes, the last outputs, the key window */
    const uint32_t hold4 = (uint32_t)min(a.hold, 255) * 0x01010101u;
    uint32_t hw = a.hold > 0 ? *reinterpret_cast<const word *>(held + p) : 0u;
    uint32_t keys[CONFIG_HOLD_SPAN];
    int nkeys = a.nkeys;
#pragma unroll
    for (int i = 0; i < CONFIG_HOLD_SPAN; i++)
        keys[i] = a.keys[i];
#pragma unroll
    for (int i = 0; i < S; i++)
        if (i < have) {
            const int slot = (a.head - i + a.slots) % a.slots;
            hy[i] = *reinterpret_cast<const word *>(ring_y + slot * plane + p);
            hm[i] = *reinterpret_cast<const word *>(ring_m + slot * plane + p);
        }
    /* frames in groups of FT_AHEAD, the next group's words (and cut
     * flags) loaded before this group is filtered and stored: the stores
     * may alias the loads as far as the compiler knows, so loads issued
     * after them would wait a memory round trip a group */
    uint32_t raws[FT_AHEAD], ycs[FT_AHEAD];
    unsigned cuts = ft_group<word>(a, y, sad, 0, plane, p, px, py, raws, ycs);
    for (int j0 = 0; j0 < a.n; j0 += FT_AHEAD) {
        uint32_t nraws[FT_AHEAD], nycs[FT_AHEAD];
        const unsigned ncuts = j0 + FT_AHEAD < a.n
                                   ? ft_group<word>(a, y, sad, j0 + FT_AHEAD, plane, p, px, py,
                                              nraws, nycs)
                                   : 0u;
#pragma unroll
        for (int q = 0; q < FT_AHEAD; q++) {
            const int j = j0 + q;
            if (j >= a.n)
                break;
            if (cuts >> q & 1u)
                have = 0;
            const uint32_t raw = raws[q], yc = ycs[q];
            /* the neighbourhood's bits (k_temporal_still), when the test
             * is made on one */
            const uint32_t near = a.still_r > 0 ? ft_near<V>(a, e + j * plane, px, py) : 0u;
            uint32_t out = ft_uniform(raw, hm, have, FULL) ? raw
                           : ft_filter<V>(a, raw, yc, hy, hm, have, still4, near);
            if (a.hold > 0) { /* the C twin's hold, a byte at a time as SIMD */
                const uint32_t key = temporal_hold_key(sad[j]);
                const unsigned refresh = temporal_hold_refresh(have, key, keys, nkeys);
                temporal_hold_push(keys, &nkeys, key);
                if (!refresh && have > 0) {
                    const uint32_t still =
                        a.still_r > 0  ? (near & 0x01010101u) * 0xffu
                        : a.still >= 0 ? __vcmpleu4(__vabsdiffu4(yc, hy[0]), still4)
                                       : 0u;
                    const uint32_t keep = still & __vcmpleu4(__vabsdiffu4(out, hw), hold4);
                    out = (hw & keep) | (out & ~keep);
                }
                hw = out;
            }
            *reinterpret_cast<word *>(a.mask[j] + (size_t)py * a.ls[j] + px) = (word)out;
#pragma unroll
            for (int i = S - 1; i > 0; i--) {
                hy[i] = hy[i - 1];
                hm[i] = hm[i - 1];
            }
            hy[0] = yc;
            hm[0] = raw;
            if (have < a.slots)
                have++;
        }
#pragma unroll
        for (int q = 0; q < FT_AHEAD; q++) {
            raws[q] = nraws[q];
            ycs[q] = nycs[q];
        }
        cuts = ncuts;
    }
    if (a.hold > 0)
        *reinterpret_cast<word *>(held + p) = (word)hw;
    /* the ring as frame-by-frame updates leave it: the last min(n, slots)
     * frames, the newest at head + n */
    const int head = (a.head + a.n) % a.slots;
#pragma unroll
    for (int i = 0; i < S; i++)
        if (i < a.n && i < a.slots) {
            const int slot = (head - i + a.slots) % a.slots;
            *reinterpret_cast<word *>(ring_y + slot * plane + p) = (word)hy[i];
            *reinterpret_cast<word *>(ring_m + slot * plane + p) = (word)hm[i];
        }
}

extern "C" int frame_temporal_cuda(const struct temporal_opts *o, const struct temporal_state *s,
                                   int n, const struct frame_masks *masks, const uint8_t *y,
                                   const unsigned long long *sad, uint8_t *ring_m,
                                   uint8_t *ring_y, uint8_t *held, uint8_t *still,
                                   cudaStream_t st, vr_err *err)
{
    if (o->frames < 2)
        return 0;
    if (n < 1 || n > FRAME_CU_MAX_FRAMES)
        return vr_err_set(err, VR_EINVAL, "temporal: %d frames", n);
    ft_params a;
    for (int i = 0; i < TEMPORAL_MAX_FRAMES; i++)
        a.weight[i] = o->weight[i];
    a.cut_sad = o->cut_sad;
    a.still = o->still;
    a.still_r = o->still_r;
    a.slots = o->frames - 1;
    a.have = s->have;
    a.head = s->head;
    a.w = o->w;
    a.h = o->h;
    a.n = n;
    a.hold = o->hold;
    a.nkeys = s->nkeys;
    for (int i = 0; i < CONFIG_HOLD_SPAN; i++)
        a.keys[i] = i < s->nkeys ? s->keys[i] : 0u;
    if (o->hold > 0 && !held)
        return vr_err_set(err, VR_EINVAL, "temporal: the hold needs its plane");
    if (o->still_r > 0 && !still)
        return vr_err_set(err, VR_EINVAL, "temporal: the neighbourhood test needs its planes");
    for (int j = 0; j < n; j++) {
        a.mask[j] = masks->data[j];
        a.ls[j] = masks->linesize[j];
    }
    /* 4 pixels a thread where every row of every buffer starts 4-aligned */
    int v4 = o->w % 4 == 0 && ((uintptr_t)y & 3) == 0 && ((uintptr_t)ring_m & 3) == 0 &&
             ((uintptr_t)ring_y & 3) == 0 && ((uintptr_t)held & 3) == 0;
    for (int j = 0; j < n; j++)
        v4 &= a.ls[j] % 4 == 0 && ((uintptr_t)a.mask[j] & 3) == 0;
    const int pix = o->w * o->h, per = v4 ? 4 : 1, threads = (pix + per - 1) / per;
    if (o->still_r > 0) {
        k_temporal_still<<<(pix + 255) / 256, 256, 0, st>>>(a, y, ring_y, still);
        const int rc = ft_check("stillness", err);
        if (rc < 0)
            return rc;
    }
    if (v4)
        k_temporal<4><<<(threads + 255) / 256, 256, 0, st>>>(a, y, sad, ring_m, ring_y, held,
                                                             still);
    else
        k_temporal<1><<<(threads + 255) / 256, 256, 0, st>>>(a, y, sad, ring_m, ring_y, held,
                                                             still);
    return ft_check("filter", err);
}
