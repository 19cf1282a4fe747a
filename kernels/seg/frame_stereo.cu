/*
 * frame_stereo.cu - both eyes agree, on the GPU: the twin of
 * frame_stereo_ref.c (frame_stereo.h states the rule). Per call, over all
 * frames: k_span (each band's person columns, integer atomics; the masks
 * copied aside), k_sad (one block a frame, band and shift: the band's sum
 * of luma differences, a block reduction), k_pick (one thread a frame and
 * band: the twin's order and comparison), k_fuse (one thread a pixel and
 * eye). Integer sums and max: the twin's bits, whatever the order. After
 * the refinement, k_fuse_out4 (a thread four left output bytes and their
 * right partners; k_fuse_out, a thread a byte, where rows are not word
 * aligned) fuses the refined eyes at the same shifts.
 */
#include "frame_cuda.h"
#include "frame_stereo.h"

/* Where a call's frames and eyes are: eye pointers of frame 0 and the
 * floats from one frame to the next. */
struct stereo_view {
    float *ml, *mr;
    const float *yl, *yr;
    float *sl, *sr;
    size_t stride;
    int w, h, bands, dmax;
};

/* The workspace: sums [n][bands][2*dmax+1], span [n][bands][2], disp [n][bands]. */
struct stereo_ws {
    unsigned long long *sums;
    int *span, *disp;
};

static stereo_ws ws_split(void *ws, int n, int bands, int dmax)
{
    stereo_ws s;
    size_t nb = (size_t)n * bands;
    s.sums = (unsigned long long *)ws;
    s.span = (int *)(s.sums + nb * (2 * dmax + 1));
    s.disp = s.span + 2 * nb;
    return s;
}

static __global__ void k_span_init(int *span, int nb, int w)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nb) {
        span[2 * i] = w;
        span[2 * i + 1] = -1;
    }
}

/* blockIdx.y: row, z: frame; the row's person columns folded in shared
 * memory, then one atomic pair a block. */
static __global__ void k_span(stereo_view v, int *span)
{
    __shared__ int lo, hi;
    const int y = blockIdx.y, f = blockIdx.z;
    if (threadIdx.x == 0) {
        lo = v.w;
        hi = -1;
    }
    __syncthreads();
    const size_t off = (size_t)f * v.stride + (size_t)y * v.w;
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < v.w; x += gridDim.x * blockDim.x) {
        float a = v.ml[off + x], b = v.mr[off + x];
        v.sl[off + x] = a;
        v.sr[off + x] = b;
        if (a >= 0.5f || b >= 0.5f) {
            atomicMin(&lo, x);
            atomicMax(&hi, x);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0 && hi >= 0) {
        int *s = span + 2 * ((size_t)f * v.bands + frame_stereo_band(v.h, v.bands, y));
        atomicMin(&s[0], lo);
        atomicMax(&s[1], hi);
    }
}

#define SAD_THREADS 256

/* blockIdx.x: shift index k, y: band, z: frame. */
static __global__ void k_sad(stereo_view v, const int *span, unsigned long long *sums)
{
    __shared__ unsigned long long part[SAD_THREADS];
    const int k = blockIdx.x, b = blockIdx.y, f = blockIdx.z, nd = 2 * v.dmax + 1;
    const int *sp = span + 2 * ((size_t)f * v.bands + b);
    int y0, y1, x0 = 0, x1 = 0;
    frame_stereo_rows(v.h, v.bands, b, &y0, &y1);
    const int d = frame_stereo_shift(k);
    const int ok = y1 > y0 && frame_stereo_cols(sp[0], sp[1], v.w, v.dmax, d, &x0, &x1);
    unsigned long long sad = 0;
    if (ok) {
        const int cols = x1 - x0, rows = (y1 - y0 + 1) / 2;
        const float *yl = v.yl + (size_t)f * v.stride, *yr = v.yr + (size_t)f * v.stride;
        for (int i = threadIdx.x; i < rows * cols; i += SAD_THREADS) {
            int y = y0 + 2 * (i / cols), x = x0 + i % cols;
            int a = fcu_to_u8(yl[(size_t)y * v.w + x]), c = fcu_to_u8(yr[(size_t)y * v.w + x - d]);
            sad += (unsigned)(a > c ? a - c : c - a);
        }
    }
    part[threadIdx.x] = sad;
    __syncthreads();
    for (int o = SAD_THREADS / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o)
            part[threadIdx.x] += part[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        sums[((size_t)f * v.bands + b) * nd + k] = part[0];
}

static __global__ void k_pick(stereo_view v, int n, const int *span,
                              const unsigned long long *sums, int *disp)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * v.bands)
        return;
    const int b = i % v.bands, nd = 2 * v.dmax + 1;
    int y0, y1, best = 0;
    frame_stereo_rows(v.h, v.bands, b, &y0, &y1);
    const unsigned long long rows = (unsigned long long)((y1 - y0 + 1) / 2);
    unsigned long long best_sad = 0, best_n = 0;
    for (int k = 0; y1 > y0 && k < nd; k++) {
        int d = frame_stereo_shift(k), x0, x1;
        if (!frame_stereo_cols(span[2 * i], span[2 * i + 1], v.w, v.dmax, d, &x0, &x1))
            continue;
        unsigned long long sad = sums[(size_t)i * nd + k], cnt = rows * (x1 - x0);
        if (!best_n || sad * best_n < best_sad * cnt) {
            best = d;
            best_sad = sad;
            best_n = cnt;
        }
    }
    disp[i] = best_sad > (unsigned long long)FRAME_STEREO_MAX_SAD * best_n ? FRAME_STEREO_NONE : best;
}

/* blockIdx.y: row, z: frame * 2 + eye. */
static __global__ void k_fuse(stereo_view v, const int *disp)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    const int f = blockIdx.z >> 1, right = blockIdx.z & 1;
    if (x >= v.w)
        return;
    const int d = disp[(size_t)f * v.bands + frame_stereo_band(v.h, v.bands, y)];
    const int xo = right ? x + d : x - d;
    if (xo < 0 || xo >= v.w)
        return;
    const size_t row = (size_t)f * v.stride + (size_t)y * v.w;
    const float *own = right ? v.sr : v.sl, *other = right ? v.sl : v.sr;
    float *out = right ? v.mr : v.ml;
    out[row + x] = frame_stereo_fuse(own[row + x], other[row + xo]);
}

static int stereo_run(const stereo_view &v, int n, void *ws, cudaStream_t st, vr_err *err)
{
    if (n < 1 || v.bands < 1 || v.bands > FRAME_STEREO_MAX_BANDS || v.w < 1 || v.h < 1)
        return vr_err_set(err, VR_EINVAL, "stereo: %d frames of %dx%d in %d bands", n, v.w,
                          v.h, v.bands);
    stereo_ws s = ws_split(ws, n, v.bands, v.dmax);
    const int nb = n * v.bands;
    k_span_init<<<(nb + 127) / 128, 128, 0, st>>>(s.span, nb, v.w);
    dim3 gs((v.w + 255) / 256 < 4 ? (v.w + 255) / 256 : 4, v.h, n);
    k_span<<<gs, 256, 0, st>>>(v, s.span);
    k_sad<<<dim3(2 * v.dmax + 1, v.bands, n), SAD_THREADS, 0, st>>>(v, s.span, s.sums);
    k_pick<<<(nb + 63) / 64, 64, 0, st>>>(v, n, s.span, s.sums, s.disp);
    k_fuse<<<dim3((v.w + 127) / 128, v.h, 2 * n), 128, 0, st>>>(v, s.disp);
    return fcu_check("stereo", err);
}

extern "C" int frame_stereo_cuda(float *ml, float *mr, const float *yl, const float *yr, int w,
                                 int h, int bands, float *scratch, void *ws, int *disp,
                                 cudaStream_t st, vr_err *err)
{
    stereo_view v = { ml, mr, yl, yr, scratch, scratch + (size_t)w * h, 0, w, h, bands,
                      frame_stereo_dmax(w) };
    int rc = stereo_run(v, 1, ws, st, err);
    if (rc < 0 || !disp)
        return rc;
    stereo_ws s = ws_split(ws, 1, bands, v.dmax);
    cudaError_t e = cudaMemcpyAsync(disp, s.disp, bands * sizeof *disp, cudaMemcpyDeviceToHost, st);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(st);
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "stereo: %s", cudaGetErrorString(e));
    return 0;
}

extern "C" int frame_stereo_batch_cuda(float *work, const float *luma, int n,
                                       const struct frame_cu_plan *p, int bands, float *scratch,
                                       void *ws, cudaStream_t st, vr_err *err)
{
    const frame_cu_eye *l = &p->e[0], *r = &p->e[1];
    if (p->n_eyes != 2 || l->work_w != r->work_w || l->work_h != r->work_h)
        return vr_err_set(err, VR_EINVAL, "stereo: needs two eyes of one work size");
    stereo_view v = { work + l->work_off, work + r->work_off, luma + l->work_off,
                      luma + r->work_off, scratch + l->work_off, scratch + r->work_off,
                      p->work_per_frame, l->work_w, l->work_h, bands, frame_stereo_dmax(l->work_w) };
    return stereo_run(v, n, ws, st, err);
}

/* blockIdx.y: output row, z: frame; a thread a byte of the left eye. */
static __global__ void k_fuse_out(frame_masks m, frame_rect l, frame_rect r, int h,
                                  int work_w, int bands, const int *disp)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, f = blockIdx.z;
    if (x >= l.w)
        return;
    const int d = frame_stereo_scale(disp[(size_t)f * bands + frame_stereo_band(h, bands, y)],
                                     work_w, l.w);
    if (x - d < 0 || x - d >= l.w)
        return;
    uint8_t *row = m.data[f] + (size_t)y * m.linesize[f];
    uint8_t *a = row + (size_t)l.y * m.linesize[f] + l.x + x;
    uint8_t *b = row + (size_t)r.y * m.linesize[f] + r.x + x - d;
    *a = *b = frame_stereo_fuse_u8(*a, *b);
}

/* The same, a thread four bytes of the left eye (one aligned word: the
 * caller checked that every frame's left rows start on a word) and their
 * partners, read as the two aligned words around them: a quarter of the
 * threads and of the loads. The right eye's bytes are stored one by one
 * (another thread owns the rest of those words). */
static __global__ void k_fuse_out4(frame_masks m, frame_rect l, frame_rect r, int h,
                                   int work_w, int bands, const int *disp)
{
    const int x0 = 4 * (blockIdx.x * blockDim.x + threadIdx.x), y = blockIdx.y, f = blockIdx.z;
    if (x0 >= l.w)
        return;
    const int d = frame_stereo_scale(disp[(size_t)f * bands + frame_stereo_band(h, bands, y)],
                                     work_w, l.w);
    uint8_t *row = m.data[f] + (size_t)y * m.linesize[f];
    uint8_t *a = row + (size_t)l.y * m.linesize[f] + l.x + x0;
    uint8_t *b = row + (size_t)r.y * m.linesize[f] + r.x + x0 - d;
    if (x0 - d < 0 || x0 + 3 - d >= l.w || x0 + 3 >= l.w) { /* an edge: byte by byte */
        for (int k = 0; k < 4 && x0 + k < l.w; k++)
            if (x0 + k - d >= 0 && x0 + k - d < l.w)
                a[k] = b[k] = frame_stereo_fuse_u8(a[k], b[k]);
        return;
    }
    const unsigned own = *(const unsigned *)a;
    const uintptr_t ba = (uintptr_t)b;
    const unsigned *bw = (const unsigned *)(ba & ~(uintptr_t)3);
    const unsigned sh = 8u * (unsigned)(ba & 3);
    const unsigned other = sh ? __funnelshift_r(bw[0], bw[1], sh) : bw[0];
    unsigned out = 0;
    for (int k = 0; k < 4; k++) {
        uint8_t v = frame_stereo_fuse_u8((uint8_t)(own >> 8 * k), (uint8_t)(other >> 8 * k));
        out |= (unsigned)v << 8 * k;
        b[k] = v;
    }
    *(unsigned *)a = out;
}

extern "C" int frame_stereo_out_batch_cuda(const struct frame_masks *m, int n,
                                           const struct frame_cu_plan *p, int bands,
                                           const void *ws, cudaStream_t st, vr_err *err)
{
    const frame_cu_eye *l = &p->e[0], *r = &p->e[1];
    if (p->n_eyes != 2 || l->out.w != r->out.w || l->out.h != r->out.h || n < 1
        || n > FRAME_CU_MAX_FRAMES || bands < 1 || bands > FRAME_STEREO_MAX_BANDS)
        return vr_err_set(err, VR_EINVAL, "stereo: refined eyes: %d frames, %d bands, "
                          "eyes %dx%d and %dx%d", n, bands, l->out.w, l->out.h, r->out.w,
                          r->out.h);
    stereo_ws s = ws_split((void *)ws, n, bands, frame_stereo_dmax(l->work_w));
    int words = 1; /* every left row starts on a 4-byte word */
    for (int f = 0; f < n; f++)
        words &= (((uintptr_t)m->data[f] + (uintptr_t)l->out.x) % 4 == 0) && m->linesize[f] % 4 == 0;
    if (words)
        k_fuse_out4<<<dim3((l->out.w + 511) / 512, l->out.h, n), 128, 0, st>>>(
            *m, l->out, r->out, l->out.h, l->work_w, bands, s.disp);
    else
        k_fuse_out<<<dim3((l->out.w + 127) / 128, l->out.h, n), 128, 0, st>>>(
            *m, l->out, r->out, l->out.h, l->work_w, bands, s.disp);
    return fcu_check("stereo: refined eyes", err);
}
