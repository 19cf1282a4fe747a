/*
 * frame_mask.cu - the CUDA frame kernels that work on masks at work size:
 * tile blending (network outputs into each eye's work mask), the
 * low-resolution half of the fast guided filter (box means and the a, b
 * coefficients). The C twins are in frame_mask_ref.c and frame_ref.h gives
 * the rules.
 *
 * Work images are small (512 x 512 per eye in the balanced profile), so
 * these kernels are about launches and passes over memory, not arithmetic:
 * each covers every frame and eye of a call in one grid (eye: y, frame: z).
 * The guided coefficients are two box filters in a row, each a horizontal
 * then a vertical pass; each box filter is one launch that keeps its
 * horizontal means in shared memory (k_gbox, radius up to 16; larger radii
 * take four launches through global memory). Sums run in the C twin's
 * order with explicit rounding steps (no FMA contraction, no running sums),
 * so results match the C twins to the bit or within an ulp (the guided
 * coefficients: to the bit, tests/gpu/g-seg-frame-guided.c).
 */
#include "frame_cuda.h"

#include <cuda_runtime.h>
#include <string.h>

/* ---- (2) blend ---- */

/* The per-pixel path (k_blend) follows frame_blend_ref literally. The tiled
 * path (k_blend_rect) computes the same values with the same float ops, but
 * whatever depends on the column alone (the inside test in x, u, its ramp
 * times the weight, the x taps) or on the row alone (v, its ramp, the y
 * taps) once per column and row of a block, into shared tables; each pixel
 * then combines them in the twin's order, so the bits are the same. */

/* the twin's sure_value: the floor's rule and a FRAME_TILE_SURE tile's */
static __device__ __forceinline__ float sure_value(float v)
{
    return fmaxf(__fsub_rn(__fmul_rn(2.0f, v), 1.0f), 0.0f);
}

/* the twin's favor_factor: floor + (1 - floor) * v (floor 0: v, exactly) */
static __device__ __forceinline__ float favor_factor(float floor, float v)
{
    return __fadd_rn(floor, __fmul_rn(__fsub_rn(1.0f, floor), v));
}

static __device__ __forceinline__ float ramp(float u, float feather, int lo, int hi)
{
    if (feather <= 0.0f || !(lo || hi))
        return 1.0f;
    float d = 1.0f;
    if (lo && u < d)
        d = u;
    if (hi && __fsub_rn(1.0f, u) < d)
        d = __fsub_rn(1.0f, u);
    float w = __fdiv_rn(d, feather);
    return w < 1e-3f ? 1e-3f : (w > 1.0f ? 1.0f : w);
}

/* One axis of tile_sample: the sample position s clamped to [0, m-1], its
 * taps i0, i1 and the fraction t. */
static __device__ __forceinline__ void blend_taps(float s, int m, int *i0, int *i1, float *t)
{
    s = s < 0.0f ? 0.0f : (s > (float)(m - 1) ? (float)(m - 1) : s);
    *i0 = (int)s;
    *i1 = *i0 + 1 < m ? *i0 + 1 : m - 1;
    *t = __fsub_rn(s, (float)*i0);
}

static __device__ __forceinline__ float tile_sample(const float *t, int mw, int mh, float sx,
                                                    float sy)
{
    int x0, x1, y0, y1;
    float tx, ty;
    blend_taps(sx, mw, &x0, &x1, &tx);
    blend_taps(sy, mh, &y0, &y1, &ty);
    float a = __ldg(t + (size_t)y0 * mw + x0), b = __ldg(t + (size_t)y0 * mw + x1);
    float c = __ldg(t + (size_t)y1 * mw + x0), d = __ldg(t + (size_t)y1 * mw + x1);
    return fcu_lerp(fcu_lerp(a, b, tx), fcu_lerp(c, d, tx), ty);
}

/* Any number of tiles: a thread a pixel. */
__global__ void __launch_bounds__(256)
k_blend(const float *__restrict__ tiles, int mw, int mh, const frame_tile *__restrict__ td,
        const __grid_constant__ frame_cu_plan p, float *__restrict__ out)
{
    const frame_cu_eye &e = p.e[blockIdx.y];
    const int pix = blockIdx.x * blockDim.x + threadIdx.x;
    if (pix >= e.work_w * e.work_h)
        return;
    const int fr = blockIdx.z;
    const float px = (float)(pix % e.work_w) + 0.5f, py = (float)(pix / e.work_w) + 0.5f;
    float sw = 0.0f, sv = 0.0f, floor_v = 0.0f;
    for (int i = e.tile0; i < e.tile0 + e.ntiles; i++) {
        const frame_tile t = td[i];
        if (!(px >= t.x && px < __fadd_rn(t.x, t.w) && py >= t.y && py < __fadd_rn(t.y, t.h)))
            continue;
        float u = __fdiv_rn(__fsub_rn(px, t.x), t.w), v = __fdiv_rn(__fsub_rn(py, t.y), t.h);
        float w = __fmul_rn(__fmul_rn(t.weight,
                                      ramp(u, t.feather, t.edges & FRAME_EDGE_L, t.edges & FRAME_EDGE_R)),
                            ramp(v, t.feather, t.edges & FRAME_EDGE_T, t.edges & FRAME_EDGE_B));
        const float *src = tiles + ((size_t)fr * p.tiles_per_frame + i) * mw * mh;
        float val = tile_sample(src, mw, mh, __fsub_rn(__fmul_rn(u, (float)mw), 0.5f),
                                __fsub_rn(__fmul_rn(v, (float)mh), 0.5f));
        if (t.edges & (FRAME_TILE_FLOOR | FRAME_TILE_SURE))
            val = sure_value(val);
        if (t.edges & FRAME_TILE_FLOOR) {
            floor_v = fmaxf(floor_v, val);
            continue;
        }
        const float fv = favor_factor(t.favor_floor, val);
        for (int k = 0; k < t.favor; k++)
            w = __fmul_rn(w, fv);
        sw = __fadd_rn(sw, w);
        sv = __fadd_rn(sv, __fmul_rn(w, val));
    }
    out[(size_t)fr * p.work_per_frame + e.work_off + pix] =
        fmaxf(sw > 0.0f ? __fdiv_rn(sv, sw) : 0.0f, floor_v);
}

#define BLEND_THREADS 256
#define BLEND_BW 64                                     /* columns a block */
#define BLEND_RT 4                                      /* rows a thread */
#define BLEND_RS (BLEND_THREADS / BLEND_BW)             /* row stride: 4 */
#define BLEND_BH (BLEND_RT * BLEND_RS)                  /* rows a block: 16 */
#define BLEND_FB 2                                      /* frames a block */
#define BLEND_MAX_TILES 17                              /* 4 x 4 grid + whole pass */

/* A column of the block for one tile: wx = weight * ramp_x, the x taps and
 * fraction; x0 < 0 where the tile does not cover the column. */
struct __align__(16) blend_col {
    float wx, tx;
    int x0, x1;
};

/* A row for one tile: ramp_y, the fraction and the taps' offsets y * mw;
 * o0 < 0 where the tile does not cover the row. */
struct __align__(16) blend_row {
    float ry, ty;
    int o0, o1;
};

/* A block: BLEND_BW x BLEND_BH pixels of one eye in BLEND_FB frames (grid:
 * blocks of the eye, eye, frame group). A thread: one column, BLEND_RT rows
 * BLEND_RS apart, all the block's frames; tiles outermost, so each pixel's
 * sums still run in tile order. At most BLEND_MAX_TILES tiles an eye. */
__global__ void __launch_bounds__(BLEND_THREADS, 4)
k_blend_rect(const float *__restrict__ tiles, int n, int mw, int mh,
             const frame_tile *__restrict__ td, const __grid_constant__ frame_cu_plan p,
             float *__restrict__ out)
{
    __shared__ blend_col cols[BLEND_MAX_TILES][BLEND_BW];
    __shared__ blend_row rows[BLEND_MAX_TILES][BLEND_BH];
    __shared__ int kind[BLEND_MAX_TILES], favor[BLEND_MAX_TILES]; /* FLOOR / SURE bits */
    __shared__ float ffloor[BLEND_MAX_TILES];
    const frame_cu_eye &e = p.e[blockIdx.y];
    const int nbx = (e.work_w + BLEND_BW - 1) / BLEND_BW;
    const int nby = (e.work_h + BLEND_BH - 1) / BLEND_BH;
    if ((int)blockIdx.x >= nbx * nby)
        return;
    const int bx = (blockIdx.x % nbx) * BLEND_BW, by = (blockIdx.x / nbx) * BLEND_BH;
    const int nt = e.ntiles;

    for (int k = threadIdx.x; k < nt * (BLEND_BW + BLEND_BH); k += BLEND_THREADS) {
        const int i = k / (BLEND_BW + BLEND_BH), j = k % (BLEND_BW + BLEND_BH);
        const frame_tile t = td[e.tile0 + i];
        if (j == 0) {
            kind[i] = t.edges & (FRAME_TILE_FLOOR | FRAME_TILE_SURE);
            favor[i] = t.favor;
            ffloor[i] = t.favor_floor;
        }
        int i0, i1;
        float f;
        if (j < BLEND_BW) {
            const float px = (float)(bx + j) + 0.5f;
            blend_col c = { 0.0f, 0.0f, -1, -1 };
            if (px >= t.x && px < __fadd_rn(t.x, t.w)) {
                const float u = __fdiv_rn(__fsub_rn(px, t.x), t.w);
                c.wx = __fmul_rn(t.weight, ramp(u, t.feather, t.edges & FRAME_EDGE_L,
                                                t.edges & FRAME_EDGE_R));
                blend_taps(__fsub_rn(__fmul_rn(u, (float)mw), 0.5f), mw, &i0, &i1, &f);
                c = blend_col{ c.wx, f, i0, i1 };
            }
            cols[i][j] = c;
        } else {
            const float py = (float)(by + j - BLEND_BW) + 0.5f;
            blend_row r = { 0.0f, 0.0f, -1, -1 };
            if (py >= t.y && py < __fadd_rn(t.y, t.h)) {
                const float v = __fdiv_rn(__fsub_rn(py, t.y), t.h);
                r.ry = ramp(v, t.feather, t.edges & FRAME_EDGE_T, t.edges & FRAME_EDGE_B);
                blend_taps(__fsub_rn(__fmul_rn(v, (float)mh), 0.5f), mh, &i0, &i1, &f);
                r = blend_row{ r.ry, f, i0 * mw, i1 * mw };
            }
            rows[i][j - BLEND_BW] = r;
        }
    }
    __syncthreads();

    const int cx = threadIdx.x % BLEND_BW, ry0 = threadIdx.x / BLEND_BW;
    const int x = bx + cx, f0 = blockIdx.z * BLEND_FB;
    const int nf = n - f0 < BLEND_FB ? n - f0 : BLEND_FB;
    if (x >= e.work_w)
        return;
    const size_t plane = (size_t)mw * mh, fstride = (size_t)p.tiles_per_frame * plane;
    float sw[BLEND_RT][BLEND_FB], sv[BLEND_RT][BLEND_FB], fl[BLEND_RT][BLEND_FB];
#pragma unroll
    for (int r = 0; r < BLEND_RT; r++)
#pragma unroll
        for (int f = 0; f < BLEND_FB; f++)
            sw[r][f] = sv[r][f] = fl[r][f] = 0.0f;
    for (int i = 0; i < nt; i++) {
        const blend_col c = cols[i][cx];
        if (c.x0 < 0)
            continue;
        const bool floor_tile = kind[i] & FRAME_TILE_FLOOR, sure = kind[i] != 0;
        const int fv = favor[i];
        const float ff = ffloor[i];
        const float *src = tiles + ((size_t)f0 * p.tiles_per_frame + e.tile0 + i) * plane;
#pragma unroll
        for (int r = 0; r < BLEND_RT; r++) {
            const blend_row rw = rows[i][ry0 + r * BLEND_RS];
            if (rw.o0 < 0 || by + ry0 + r * BLEND_RS >= e.work_h)
                continue;
            const float w = __fmul_rn(c.wx, rw.ry);
#pragma unroll
            for (int f = 0; f < BLEND_FB; f++) {
                if (f >= nf)
                    break;
                const float *s0 = src + f * fstride + rw.o0, *s1 = src + f * fstride + rw.o1;
                float val = fcu_lerp(fcu_lerp(__ldg(s0 + c.x0), __ldg(s0 + c.x1), c.tx),
                                     fcu_lerp(__ldg(s1 + c.x0), __ldg(s1 + c.x1), c.tx),
                                     rw.ty);
                if (sure) /* the floor's rule too */
                    val = sure_value(val);
                if (floor_tile) {
                    fl[r][f] = fmaxf(fl[r][f], val);
                } else {
                    float wv = w;
                    const float fac = favor_factor(ff, val);
                    for (int k = 0; k < fv; k++)
                        wv = __fmul_rn(wv, fac);
                    sw[r][f] = __fadd_rn(sw[r][f], wv);
                    sv[r][f] = __fadd_rn(sv[r][f], __fmul_rn(wv, val));
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < BLEND_RT; r++) {
        const int y = by + ry0 + r * BLEND_RS;
        if (y >= e.work_h)
            break;
#pragma unroll
        for (int f = 0; f < BLEND_FB; f++) {
            if (f >= nf)
                break;
            out[(size_t)(f0 + f) * p.work_per_frame + e.work_off + (size_t)y * e.work_w + x] =
                fmaxf(sw[r][f] > 0.0f ? __fdiv_rn(sv[r][f], sw[r][f]) : 0.0f, fl[r][f]);
        }
    }
}

extern "C" int frame_blend_batch_cuda(const float *tiles, int n, int mw, int mh,
                                      const struct frame_tile *tile,
                                      const struct frame_cu_plan *p, float *out,
                                      cudaStream_t st, vr_err *err)
{
    if (n < 1 || n > 65535)
        return vr_err_set(err, VR_EINVAL, "blend: %d frames", n);
    int max_nt = 0, blocks = 1;
    for (int i = 0; i < p->n_eyes; i++) {
        const frame_cu_eye *e = &p->e[i];
        const int b = ((e->work_w + BLEND_BW - 1) / BLEND_BW)
                      * ((e->work_h + BLEND_BH - 1) / BLEND_BH);
        max_nt = e->ntiles > max_nt ? e->ntiles : max_nt;
        blocks = b > blocks ? b : blocks;
    }
    if (max_nt <= BLEND_MAX_TILES) {
        dim3 grid(blocks, p->n_eyes, (n + BLEND_FB - 1) / BLEND_FB);
        k_blend_rect<<<grid, BLEND_THREADS, 0, st>>>(tiles, n, mw, mh, tile, *p, out);
    } else {
        dim3 grid((p->max_work + 255) / 256, p->n_eyes, n);
        k_blend<<<grid, 256, 0, st>>>(tiles, mw, mh, tile, *p, out);
    }
    return fcu_check("blend", err);
}

/* ---- (3) guided coefficients ---- */

/* Where pixel `pix` of eye e of frame fr lives in a work-layout plane. */
static __device__ __forceinline__ size_t widx(const frame_cu_plan &p, const frame_cu_eye &e,
                                              int fr, int pix)
{
    return (size_t)fr * p.work_per_frame + e.work_off + pix;
}

/* The terms a horizontal box sums for one input pixel (u, v): MODE 4 (I, p)
 * gives I, p, I*p, I*I; MODE 2 (a0, b0) gives a0, b0. */
template <int MODE>
static __device__ __forceinline__ void box_terms(float u, float v, float t[MODE])
{
    t[0] = u;
    t[1] = v;
    if (MODE == 4) {
        t[2] = __fmul_rn(u, v);
        t[3] = __fmul_rn(u, u);
    }
}

template <int MODE>
static __device__ __forceinline__ void box_add(float s[MODE], const float t[MODE])
{
#pragma unroll
    for (int q = 0; q < MODE; q++)
        s[q] = __fadd_rn(s[q], t[q]);
}

/* k_vbox<4>'s end: the four vertical sums times inv give the means, and
 * a0 = cov/(var+eps), b0 = mean_p - a0*mean_I. */
static __device__ __forceinline__ void box_coeffs(const float s[4], float inv, float eps,
                                                  float *a0, float *b0)
{
    float mI = __fmul_rn(s[0], inv), mp = __fmul_rn(s[1], inv);
    float mIp = __fmul_rn(s[2], inv), mII = __fmul_rn(s[3], inv);
    float cov = __fsub_rn(mIp, __fmul_rn(mI, mp));
    float var = __fsub_rn(mII, __fmul_rn(mI, mI));
    const float a = __fdiv_rn(cov, __fadd_rn(var, eps));
    *a0 = a;
    *b0 = __fsub_rn(mp, __fmul_rn(a, mI));
}

/* -- the fused path: one horizontal and one vertical pass per launch --
 *
 * A block owns a GB_TW x GB_TH tile of one eye of one frame. It loads the
 * tile's inputs with r columns and r rows of halo (clipped to the image)
 * into shared memory, writes the horizontal means of the tile's columns for
 * the tile's rows and halo rows into shared memory, then the vertical means
 * of its outputs. Every sum is k_hbox's and k_vbox's, term for term in the
 * same order; only where the terms come from changes.
 *
 * 32 x 32: a warp's 32 columns make the vertical pass's reads and the
 * stores whole lines; 32 rows keep the halo rows the horizontal pass
 * recomputes at (32 + 2r) / 32 = 1.25 for r = 4, and give each of the 8
 * thread rows GB_ROWS = 4 outputs. Shared memory bandwidth is what bounds
 * these passes, so each thread reuses what it reads: in the horizontal pass
 * a thread sums two adjacent columns (2r + 2 reads for two windows), in the
 * vertical pass four rows (2r + 4 reads for four windows). Input pixels are
 * stored as (u, v) pairs, even columns first then odd, so that the 16
 * threads of a row, two columns apart, read 16 consecutive pairs.
 * Occupancy: 6 blocks an SM (40 registers), which shared memory allows
 * for r <= 5 (MODE 4: 35 KB a block at r = 4). */
#define GB_TW 32
#define GB_TH 32
#define GB_ROWS 4      /* vertical pass outputs per thread */
#define GB_THREADS 256 /* GB_TW x GB_TH / GB_ROWS */
#define GB_RMAX 16     /* larger radii take the four-pass path (shared memory) */
#define GB_LOAD_ROWS 5 /* input rows a warp stages at once: 40 rows (r = 4) in one pass */

/* Pairs of one parity in an input row: the least value >= 16 + r that is
 * 8 mod 16, so that a warp's stores of even and odd columns fall in other
 * banks. */
static __host__ __device__ __forceinline__ int gb_half(int r)
{
    return (r + 23) / 16 * 16 + 8;
}

static __host__ __device__ __forceinline__ int gb_pos(int s, int half)
{
    return (s & 1) * half + (s >> 1);
}

/* Shared memory of k_gbox<MODE> for radius r: input pairs, then the
 * horizontal means (MODE floats a pixel) of GB_TH + 2r rows. */
static __host__ __device__ __forceinline__ size_t gb_smem(int mode, int r)
{
    const size_t rows = GB_TH + 2 * r;
    return rows * 2 * gb_half(r) * sizeof(float2) + rows * GB_TW * mode * sizeof(float);
}

template <int MODE> struct gb_vec;
template <> struct gb_vec<2> {
    typedef float2 t;
    static __device__ __forceinline__ t make(const float s[2]) { return make_float2(s[0], s[1]); }
    static __device__ __forceinline__ void get(t v, float s[2]) { s[0] = v.x; s[1] = v.y; }
};
template <> struct gb_vec<4> {
    typedef float4 t;
    static __device__ __forceinline__ t make(const float s[4])
    {
        return make_float4(s[0], s[1], s[2], s[3]);
    }
    static __device__ __forceinline__ void get(t v, float s[4])
    {
        s[0] = v.x; s[1] = v.y; s[2] = v.z; s[3] = v.w;
    }
};

/* Horizontal means of smem row `in` (pairs, gb_pos layout) for the columns
 * x0 = 2l and x1 = 2l + 1 of the tile (smem columns are image columns minus
 * tx0 - r; clo, chi: the first and last inside the image). Column x0 sums
 * smem columns [lo, hi0], x1 [lo1, hi]; lo1 - lo and hi - hi0 are 0 or 1
 * and lo1 <= hi0 + 1 (x0 inside the image), so: lo alone, both to hi0, hi
 * alone. Each sum still adds its columns in increasing order. */
template <int MODE>
static __device__ __forceinline__ void gb_hpair(const float2 *in, int half, int l, int r,
                                                int clo, int chi, typename gb_vec<MODE>::t *out)
{
    const int lo = max(2 * l, clo), lo1 = max(2 * l + 1, clo);
    const int hi0 = min(2 * l + 2 * r, chi), hi = min(2 * l + 1 + 2 * r, chi);
    float s0[MODE], s1[MODE], t[MODE];
#pragma unroll
    for (int q = 0; q < MODE; q++)
        s0[q] = s1[q] = 0.0f;
    int s = lo;
    if (lo < lo1) {
        float2 v = in[gb_pos(s++, half)];
        box_terms<MODE>(v.x, v.y, t);
        box_add<MODE>(s0, t);
    }
    /* s and s + 1 step through their halves one pair at a time */
    const float2 *pa = in + gb_pos(s, half), *pb = in + gb_pos(s + 1, half);
    for (; s + 1 <= hi0; s += 2, pa++, pb++) {
        float2 v = *pa;
        box_terms<MODE>(v.x, v.y, t);
        box_add<MODE>(s0, t);
        box_add<MODE>(s1, t);
        v = *pb;
        box_terms<MODE>(v.x, v.y, t);
        box_add<MODE>(s0, t);
        box_add<MODE>(s1, t);
    }
    if (s <= hi0) {
        float2 v = *pa;
        s++;
        box_terms<MODE>(v.x, v.y, t);
        box_add<MODE>(s0, t);
        box_add<MODE>(s1, t);
    }
    if (s <= hi) {
        float2 v = in[gb_pos(s, half)];
        box_terms<MODE>(v.x, v.y, t);
        box_add<MODE>(s1, t);
    }
    /* column x1 may lie outside the image: its (unread) mean is garbage */
    const float c0 = (float)(hi0 - lo + 1), c1 = (float)(hi - lo1 + 1);
#pragma unroll
    for (int q = 0; q < MODE; q++) {
        s0[q] = __fdiv_rn(s0[q], c0);
        s1[q] = __fdiv_rn(s1[q], c1);
    }
    out[2 * l] = gb_vec<MODE>::make(s0);
    out[2 * l + 1] = gb_vec<MODE>::make(s1);
}

/* Vertical sums for the GB_ROWS outputs of rows y0 + j, each over image
 * rows [max(y0 + j - r, 0), min(y0 + j + r, h - 1)] in increasing order,
 * from the horizontal means `col` (one per smem row, GB_TW apart; smem row
 * = image row - ry0). Where no window is clipped (and 2r + 2 >= GB_ROWS)
 * a staircase: the rows before the last window's start go to the outputs
 * they reach, the rows all windows share to all, then the rest; elsewhere
 * each row is tested against each window. */
template <int MODE>
static __device__ __forceinline__ void gb_vsum(const typename gb_vec<MODE>::t *col, int ry0,
                                               int y0, int r, int h, float s[GB_ROWS][MODE])
{
    float t[MODE];
#pragma unroll
    for (int j = 0; j < GB_ROWS; j++)
#pragma unroll
        for (int q = 0; q < MODE; q++)
            s[j][q] = 0.0f;
    if (y0 - r >= 0 && y0 + GB_ROWS - 1 + r <= h - 1 && 2 * r + 2 >= GB_ROWS) {
        const typename gb_vec<MODE>::t *c = col + (size_t)(y0 - r - ry0) * GB_TW;
#pragma unroll
        for (int i = 0; i < GB_ROWS - 1; i++) { /* row y0 - r + i: outputs 0..i */
            gb_vec<MODE>::get(c[i * GB_TW], t);
#pragma unroll
            for (int j = 0; j <= i; j++)
                box_add<MODE>(s[j], t);
        }
        for (int k = GB_ROWS - 1; k <= 2 * r; k++) { /* rows all windows hold */
            gb_vec<MODE>::get(c[k * GB_TW], t);
#pragma unroll
            for (int j = 0; j < GB_ROWS; j++)
                box_add<MODE>(s[j], t);
        }
#pragma unroll
        for (int i = 1; i < GB_ROWS; i++) { /* row y0 + r + i: outputs i.. */
            gb_vec<MODE>::get(c[(2 * r + i) * GB_TW], t);
#pragma unroll
            for (int j = i; j < GB_ROWS; j++)
                box_add<MODE>(s[j], t);
        }
        return;
    }
    const int k1 = min(y0 + GB_ROWS - 1 + r, h - 1);
    for (int k = max(y0 - r, 0); k <= k1; k++) {
        gb_vec<MODE>::get(col[(size_t)(k - ry0) * GB_TW], t);
#pragma unroll
        for (int j = 0; j < GB_ROWS; j++)
            if (k >= y0 + j - r && k <= y0 + j + r)
                box_add<MODE>(s[j], t);
    }
}

/* K1 (MODE 4): I, p -> a0, b0 (k_hbox<4> then k_vbox<4>); K2 (MODE 2):
 * a0, b0 -> a, b (k_hbox<2> then k_vbox<2>). Grid: (tiles of the largest
 * eye, ntx a row; eye; frame). Shared memory: gb_smem(MODE, r), r <= GB_RMAX. */
template <int MODE>
__global__ void __launch_bounds__(GB_THREADS, 6)
k_gbox(const float *__restrict__ x0, const float *__restrict__ x1, float *__restrict__ o0,
       float *__restrict__ o1, const __grid_constant__ frame_cu_plan p, int ntx, int r,
       float eps)
{
    typedef typename gb_vec<MODE>::t vec;
    extern __shared__ float4 gb_sm[];
    const frame_cu_eye &e = p.e[blockIdx.y];
    const int w = e.work_w, h = e.work_h;
    const int tx0 = (blockIdx.x % ntx) * GB_TW, ty0 = (blockIdx.x / ntx) * GB_TH;
    if (tx0 >= w || ty0 >= h)
        return;
    const size_t base = widx(p, e, blockIdx.z, 0);
    const int half = gb_half(r), pitch = 2 * half, rows = GB_TH + 2 * r;
    float2 *in = (float2 *)gb_sm;
    vec *hm = (vec *)(in + (size_t)rows * pitch);

    /* image row of smem row 0, image column of smem column 0, and the smem
     * rows [rlo, rhi] and columns [clo, chi] inside the image */
    const int ry0 = ty0 - r, cx0 = tx0 - r;
    const int rlo = max(ry0, 0) - ry0, rhi = min(ty0 + GB_TH - 1 + r, h - 1) - ry0;
    const int clo = max(cx0, 0) - cx0, chi = min(tx0 + GB_TW - 1 + r, w - 1) - cx0;

    /* a warp a row, a lane columns clo + lane and clo + lane + 32 (rows are
     * at most GB_TW + 2 GB_RMAX = 64 wide); GB_LOAD_ROWS rows a warp with
     * all their loads issued before the stores (a load-store loop waited
     * a round trip an element: ncu, half the stall samples) */
    {
        const int lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
        const int sa = clo + lane, sb = sa + 32;
        const bool ina = sa <= chi, inb = sb <= chi;
        for (int r0 = rlo + wp; r0 <= rhi; r0 += (GB_THREADS / 32) * GB_LOAD_ROWS) {
            float2 va[GB_LOAD_ROWS], vb[GB_LOAD_ROWS];
#pragma unroll
            for (int u = 0; u < GB_LOAD_ROWS; u++) {
                const int rr = r0 + u * (GB_THREADS / 32);
                const size_t g = base + (size_t)(ry0 + rr) * w + cx0;
                if (rr <= rhi && ina)
                    va[u] = make_float2(__ldg(x0 + g + sa), __ldg(x1 + g + sa));
                if (rr <= rhi && inb)
                    vb[u] = make_float2(__ldg(x0 + g + sb), __ldg(x1 + g + sb));
            }
#pragma unroll
            for (int u = 0; u < GB_LOAD_ROWS; u++) {
                const int rr = r0 + u * (GB_THREADS / 32);
                if (rr <= rhi && ina)
                    in[rr * pitch + gb_pos(sa, half)] = va[u];
                if (rr <= rhi && inb)
                    in[rr * pitch + gb_pos(sb, half)] = vb[u];
            }
        }
    }
    __syncthreads();

    /* horizontal: 16 threads a row, two columns each */
    const int l = threadIdx.x & 15;
    if (tx0 + 2 * l < w)
        for (int rr = rlo + (threadIdx.x >> 4); rr <= rhi; rr += GB_THREADS / 16)
            gb_hpair<MODE>(in + rr * pitch, half, l, r, clo, chi, hm + rr * GB_TW);
    __syncthreads();

    /* vertical: a column and GB_ROWS rows a thread */
    const int x = tx0 + (threadIdx.x & 31), y0 = ty0 + GB_ROWS * (threadIdx.x >> 5);
    if (x >= w || y0 >= h)
        return;
    float s[GB_ROWS][MODE];
    gb_vsum<MODE>(hm + (threadIdx.x & 31), ry0, y0, r, h, s);
#pragma unroll
    for (int j = 0; j < GB_ROWS; j++) {
        const int y = y0 + j;
        if (y >= h)
            break;
        const int a = max(y - r, 0), b = min(y + r, h - 1);
        const float inv = __fdiv_rn(1.0f, (float)(b - a + 1));
        const size_t i = base + (size_t)y * w + x;
        if (MODE == 4) {
            float c0, c1;
            box_coeffs(s[j], inv, eps, &c0, &c1);
            o0[i] = c0;
            o1[i] = c1;
        } else {
            o0[i] = __fmul_rn(s[j][0], inv);
            o1[i] = __fmul_rn(s[j][1], inv);
        }
    }
}

/* -- the four-pass path (radius > GB_RMAX) -- */

/* Horizontal box sums (C's first pass: t = sum / count, window clipped).
 * MODE 4 (I, p): outputs I, p, I*p, I*I; MODE 2 (a0, b0): 2 outputs. */
template <int MODE>
__global__ void __launch_bounds__(256)
k_hbox(const float *__restrict__ x0, const float *__restrict__ x1, float *o0, float *o1,
       float *o2, float *o3, const __grid_constant__ frame_cu_plan p, int r)
{
    const frame_cu_eye &e = p.e[blockIdx.y];
    const int w = e.work_w;
    const int pix = blockIdx.x * blockDim.x + threadIdx.x;
    if (pix >= w * e.work_h)
        return;
    const int fr = blockIdx.z, x = pix % w;
    const size_t row = widx(p, e, fr, pix - x);
    const int a = x - r < 0 ? 0 : x - r, b = x + r >= w ? w - 1 : x + r;
    const float cnt = (float)(b - a + 1);
    float s[MODE], t[MODE];
#pragma unroll
    for (int q = 0; q < MODE; q++)
        s[q] = 0.0f;
    for (int k = a; k <= b; k++) {
        box_terms<MODE>(__ldg(x0 + row + k), __ldg(x1 + row + k), t);
        box_add<MODE>(s, t);
    }
    const size_t i = row + x;
    o0[i] = __fdiv_rn(s[0], cnt);
    o1[i] = __fdiv_rn(s[1], cnt);
    if (MODE == 4) {
        o2[i] = __fdiv_rn(s[2], cnt);
        o3[i] = __fdiv_rn(s[3], cnt);
    }
}

/* Vertical box means (C's second pass: sum in row order, times 1/count).
 * MODE 4: the four means give a0, b0 (box_coeffs) into o0, o1. MODE 2: the
 * means of a0, b0 are the outputs a, b. */
template <int MODE>
__global__ void __launch_bounds__(256)
k_vbox(const float *__restrict__ t0, const float *__restrict__ t1,
       const float *__restrict__ t2, const float *__restrict__ t3, float *o0, float *o1,
       const __grid_constant__ frame_cu_plan p, int r, float eps)
{
    const frame_cu_eye &e = p.e[blockIdx.y];
    const int w = e.work_w, h = e.work_h;
    const int pix = blockIdx.x * blockDim.x + threadIdx.x;
    if (pix >= w * h)
        return;
    const int fr = blockIdx.z, x = pix % w, y = pix / w;
    const size_t base = widx(p, e, fr, 0);
    const int a = y - r < 0 ? 0 : y - r, b = y + r >= h ? h - 1 : y + r;
    const float inv = __fdiv_rn(1.0f, (float)(b - a + 1));
    float s[MODE], t[MODE];
#pragma unroll
    for (int q = 0; q < MODE; q++)
        s[q] = 0.0f;
    for (int k = a; k <= b; k++) {
        const size_t i = base + (size_t)k * w + x;
        t[0] = __ldg(t0 + i);
        t[1] = __ldg(t1 + i);
        if (MODE == 4) {
            t[2] = __ldg(t2 + i);
            t[3] = __ldg(t3 + i);
        }
        box_add<MODE>(s, t);
    }
    const size_t i = base + pix;
    if (MODE == 4) {
        float c0, c1;
        box_coeffs(s, inv, eps, &c0, &c1);
        o0[i] = c0;
        o1[i] = c1;
    } else {
        o0[i] = __fmul_rn(s[0], inv);
        o1[i] = __fmul_rn(s[1], inv);
    }
}

/* The opt-in for more than 48 KB of shared memory, set once per launch
 * where needed (per device context, not a stream operation). */
template <int MODE>
static int gb_launch(dim3 grid, const float *x0, const float *x1, float *o0, float *o1,
                     const frame_cu_plan &p, int ntx, int r, float eps, cudaStream_t st)
{
    const size_t smem = gb_smem(MODE, r);
    if (smem > 48 * 1024
        && cudaFuncSetAttribute(k_gbox<MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)gb_smem(MODE, GB_RMAX)) != cudaSuccess)
        return -1;
    k_gbox<MODE><<<grid, GB_THREADS, smem, st>>>(x0, x1, o0, o1, p, ntx, r, eps);
    return 0;
}

extern "C" int frame_guided_coeffs_batch_cuda(const float *I, const float *p, int n,
                                              const struct frame_cu_plan *pl, int r,
                                              float eps, float *a, float *b, float *scratch,
                                              cudaStream_t st, vr_err *err)
{
    if (n < 1 || n > 65535 || r < 0)
        return vr_err_set(err, VR_EINVAL, "guided: %d frames, radius %d", n, r);
    const size_t np = (size_t)n * pl->work_per_frame;
    float *t0 = scratch, *t1 = t0 + np, *t2 = t1 + np, *t3 = t2 + np;
    float *a0 = t3 + np, *b0 = a0 + np;
    if (r <= GB_RMAX) {
        int mw = 0, mh = 0;
        for (int i = 0; i < pl->n_eyes; i++) {
            mw = pl->e[i].work_w > mw ? pl->e[i].work_w : mw;
            mh = pl->e[i].work_h > mh ? pl->e[i].work_h : mh;
        }
        const int ntx = (mw + GB_TW - 1) / GB_TW, nty = (mh + GB_TH - 1) / GB_TH;
        dim3 grid(ntx * nty, pl->n_eyes, n);
        /* a0, b0 in the scratch's first two planes */
        if (gb_launch<4>(grid, I, p, t0, t1, *pl, ntx, r, eps, st) < 0
            || gb_launch<2>(grid, t0, t1, a, b, *pl, ntx, r, eps, st) < 0) {
            cudaError_t e = cudaGetLastError();
            return vr_err_set(err, VR_ECUDA, "guided coefficients: %d KB of shared memory: %s",
                              (int)(gb_smem(4, GB_RMAX) / 1024), cudaGetErrorString(e));
        }
        return fcu_check("guided coefficients", err);
    }
    dim3 grid((pl->max_work + 255) / 256, pl->n_eyes, n);
    k_hbox<4><<<grid, 256, 0, st>>>(I, p, t0, t1, t2, t3, *pl, r);
    k_vbox<4><<<grid, 256, 0, st>>>(t0, t1, t2, t3, a0, b0, *pl, r, eps);
    k_hbox<2><<<grid, 256, 0, st>>>(a0, b0, t0, t1, NULL, NULL, *pl, r);
    k_vbox<2><<<grid, 256, 0, st>>>(t0, t1, NULL, NULL, a, b, *pl, r, eps);
    return fcu_check("guided coefficients", err);
}

/* ---- (3b) guided coefficients held to the edge band ----
 * frame_guided_band_ref's loops, term for term; the intrinsics keep nvcc
 * from fusing multiplies and adds the C twin rounds apart. Grid: (pixels
 * of the largest eye; eye; frame). */

/* The work pixel of this thread (grid: pixels of the largest eye; eye;
 * frame): its eye's size, its place and its eye plane's offset; false past
 * the eye's pixels. */
struct band_px {
    int w, h, x, y, i;
    size_t off;
};

static __device__ __forceinline__ bool band_pixel(const frame_cu_plan &pl, band_px *q)
{
    const frame_cu_eye &E = pl.e[blockIdx.y];
    q->w = E.work_w, q->h = E.work_h;
    q->i = blockIdx.x * blockDim.x + threadIdx.x;
    if (q->i >= q->w * q->h)
        return false;
    q->off = widx(pl, E, blockIdx.z, 0);
    q->x = q->i % q->w, q->y = q->i / q->w;
    return true;
}

__global__ void k_band_edge(const float *__restrict__ p, float *__restrict__ band,
                            const __grid_constant__ frame_cu_plan pl)
{
    band_px q;
    if (!band_pixel(pl, &q))
        return;
    const float *m = p + q.off;
    float mx = m[q.i], mn = mx;
    for (int yy = q.y - 1 < 0 ? 0 : q.y - 1; yy <= q.y + 1 && yy < q.h; yy++)
        for (int xx = q.x - 1 < 0 ? 0 : q.x - 1; xx <= q.x + 1 && xx < q.w; xx++) {
            const float v = m[yy * q.w + xx];
            mx = v > mx ? v : mx;
            mn = v < mn ? v : mn;
        }
    const float e = __fmul_rn(__fsub_rn(mx, mn), FRAME_BAND_GAIN);
    band[q.off + q.i] = e < 1.0f ? e : 1.0f;
}

/* frame_mask_ref.c's window_mean, term for term. */
static __device__ __forceinline__ float band_mean(const float *x, int w, int h, int cx, int cy,
                                                  int r)
{
    const int y0 = cy - r < 0 ? 0 : cy - r, y1 = cy + r >= h ? h - 1 : cy + r;
    const int x0 = cx - r < 0 ? 0 : cx - r, x1 = cx + r >= w ? w - 1 : cx + r;
    float s = 0.0f;
    for (int y = y0; y <= y1; y++)
        for (int k = x0; k <= x1; k++)
            s = __fadd_rn(s, x[y * w + k]);
    return __fdiv_rn(s, (float)((y1 - y0 + 1) * (x1 - x0 + 1)));
}

__global__ void k_band_apply(const float *__restrict__ p, const float *__restrict__ band,
                             float *__restrict__ a, float *__restrict__ b,
                             const __grid_constant__ frame_cu_plan pl, int r, int rbox)
{
    band_px q;
    if (!band_pixel(pl, &q))
        return;
    const float wgt = band_mean(band + q.off, q.w, q.h, q.x, q.y, r);
    const float flat = band_mean(p + q.off, q.w, q.h, q.x, q.y, rbox);
    const size_t k = q.off + q.i;
    a[k] = __fmul_rn(wgt, a[k]);
    b[k] = __fadd_rn(__fmul_rn(wgt, b[k]), __fmul_rn(__fsub_rn(1.0f, wgt), flat));
}

extern "C" int frame_guided_band_batch_cuda(const float *p, int n, const struct frame_cu_plan *pl,
                                            int r, int rbox, float *a, float *b, float *band,
                                            cudaStream_t st, vr_err *err)
{
    if (r <= 0)
        return 0;
    if (n < 1 || n > 65535)
        return vr_err_set(err, VR_EINVAL, "guided band: %d frames", n);
    dim3 grid((pl->max_work + 255) / 256, pl->n_eyes, n);
    k_band_edge<<<grid, 256, 0, st>>>(p, band, *pl);
    k_band_apply<<<grid, 256, 0, st>>>(p, band, a, b, *pl, r, rbox);
    return fcu_check("guided band", err);
}

/* ---- twins (one image) ---- */

static void one_image(struct frame_cu_plan *p, int w, int h)
{
    memset(p, 0, sizeof *p);
    p->n_eyes = 1;
    p->e[0].work_w = w;
    p->e[0].work_h = h;
    p->e[0].eye = (struct frame_rect){ 0, 0, w, h };
    p->e[0].out = p->e[0].eye;
    p->work_per_frame = (size_t)w * h;
    p->max_work = w * h;
    p->max_out = w * h;
}

extern "C" int frame_blend_cuda(const float *tiles, int n, int mw, int mh,
                                const struct frame_tile *tile, int ww, int wh, float *out,
                                cudaStream_t st, vr_err *err)
{
    struct frame_cu_plan p;
    one_image(&p, ww, wh);
    p.e[0].ntiles = n;
    p.tiles_per_frame = n;
    return frame_blend_batch_cuda(tiles, 1, mw, mh, tile, &p, out, st, err);
}

extern "C" int frame_guided_band_cuda(const float *p, int w, int h, int r, int rbox, float *a,
                                      float *b, float *band, cudaStream_t st, vr_err *err)
{
    struct frame_cu_plan pl;
    one_image(&pl, w, h);
    return frame_guided_band_batch_cuda(p, 1, &pl, r, rbox, a, b, band, st, err);
}

extern "C" int frame_guided_coeffs_cuda(const float *I, const float *p, int w, int h, int r,
                                        float eps, float *a, float *b, float *scratch,
                                        cudaStream_t st, vr_err *err)
{
    struct frame_cu_plan pl;
    one_image(&pl, w, h);
    return frame_guided_coeffs_batch_cuda(I, p, 1, &pl, r, eps, a, b, scratch, st, err);
}
