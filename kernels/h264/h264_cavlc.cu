/*
 * h264_cavlc.cu - stages 2-5 of the matte encoder as CUDA kernels (twins
 * of h264_cavlc_ref.c): the skip runs and the prefix sum as two passes
 * over blocks of 1024 MBs (below), the codewords and the pack a thread an
 * MB (h264_cavlc_impl.h).
 */
#include "h264_cavlc_impl.h"
#include "h264_cuda.h"

enum { SCAN_THREADS = 1024 };

static int launched(const char *what, vr_err *err)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "matte encoder: %s: %s", what, cudaGetErrorString(e));
    return 0;
}

/* The scans run over many blocks of SCAN_THREADS, a thread an MB (a frame
 * has at most 262144 MBs, so at most H264_SCAN_BLOCKS blocks): a first pass
 * leaves each block's aggregate in `tmp`, a second pass has every block add
 * up the aggregates of the blocks before it (at most 255 values) and scan
 * its own MBs. One block of 1024 threads, each walking 32 MBs, took
 * 0.07-0.08 ms a scan at 4096x2048 (one SM, strided loads). tmp's layout:
 * the nbits sums, then each block's last coded MB, then its three counts. */
struct scan_tmp {
    unsigned long long *sum; /* [H264_SCAN_BLOCKS] */
    int *last;               /* [H264_SCAN_BLOCKS] */
    unsigned *cnt;           /* [3][H264_SCAN_BLOCKS] */
};

static __device__ __host__ struct scan_tmp scan_tmp_of(uint64_t *tmp)
{
    struct scan_tmp t;
    t.sum = (unsigned long long *)tmp;
    t.last = (int *)(tmp + H264_SCAN_BLOCKS);
    t.cnt = (unsigned *)(t.last + H264_SCAN_BLOCKS);
    return t;
}

/* The inclusive max-scan of v over the block (SCAN_THREADS threads). */
__device__ static int block_max_scan(int v, int *warp_tot)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int off = 1; off < 32; off <<= 1) {
        int u = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off && u > v)
            v = u;
    }
    if (lane == 31)
        warp_tot[w] = v;
    __syncthreads();
    if (w == 0) {
        int x = warp_tot[lane];
        for (int off = 1; off < 32; off <<= 1) {
            int u = __shfl_up_sync(0xffffffffu, x, off);
            if (lane >= off && u > x)
                x = u;
        }
        warp_tot[lane] = x;
    }
    __syncthreads();
    if (w > 0 && warp_tot[w - 1] > v)
        v = warp_tot[w - 1];
    return v;
}

/* The inclusive sum-scan of v over the block. */
__device__ static unsigned long long block_sum_scan(unsigned long long v,
                                                    unsigned long long *warp_tot)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int off = 1; off < 32; off <<= 1) {
        unsigned long long u = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off)
            v += u;
    }
    if (lane == 31)
        warp_tot[w] = v;
    __syncthreads();
    if (w == 0) {
        unsigned long long x = warp_tot[lane];
        for (int off = 1; off < 32; off <<= 1) {
            unsigned long long u = __shfl_up_sync(0xffffffffu, x, off);
            if (lane >= off)
                x += u;
        }
        warp_tot[lane] = x;
    }
    __syncthreads();
    if (w > 0)
        v += warp_tot[w - 1];
    return v;
}

/* Skip runs, first pass: each block's last coded MB and its MB counts;
 * the nbits sums cleared (k_cavlc adds into them). */
__global__ static void k_runs_blocks(struct h264_frame f, uint64_t *tmp)
{
    __shared__ unsigned cnt[3];
    struct scan_tmp st = scan_tmp_of(tmp);
    int t = threadIdx.x, b = blockIdx.x, n = f.mbw * f.mbh, i = b * SCAN_THREADS + t;
    if (t < 3)
        cnt[t] = 0;
    __syncthreads();
    int ty = i < n ? f.mb[i].type : -1;
    int l = ty > H264_MB_SKIP ? i : -1;
    l = __reduce_max_sync(0xffffffffu, l);
    for (int j = 0; j < 3; j++) {
        unsigned k = __reduce_add_sync(0xffffffffu, ty == j ? 1u : 0u);
        if ((t & 31) == 0 && k)
            atomicAdd(&cnt[j], k);
    }
    if ((t & 31) == 0)
        atomicMax(&st.last[b], l); /* set to -1 by k_runs */
    __syncthreads();
    if (t < 3)
        st.cnt[t * H264_SCAN_BLOCKS + b] = cnt[t];
    if (t == 0)
        st.sum[b] = 0;
}

/* Skip runs, second pass: run[i] from the last coded MB before i. */
__global__ static void k_runs(struct h264_frame f, uint64_t *tmp)
{
    __shared__ int warp_tot[32];
    __shared__ int before;
    struct scan_tmp st = scan_tmp_of(tmp);
    int t = threadIdx.x, b = blockIdx.x, n = f.mbw * f.mbh, i = b * SCAN_THREADS + t;
    int nb = gridDim.x;
    if (t < 32) { /* the last coded MB of the blocks before this one */
        int m = -1;
        for (int k = t; k < b; k += 32)
            m = st.last[k] > m ? st.last[k] : m;
        m = __reduce_max_sync(0xffffffffu, m);
        if (t == 0)
            before = m;
    }
    int coded = i < n && f.mb[i].type != H264_MB_SKIP;
    __syncthreads();
    int incl = block_max_scan(coded ? i : -1, warp_tot);
    if (incl < before)
        incl = before;
    int excl = __shfl_up_sync(0xffffffffu, incl, 1); /* the MB before's */
    if ((t & 31) == 0) /* the previous warp's last, or the blocks' before */
        excl = t > 0 && warp_tot[(t >> 5) - 1] > before ? warp_tot[(t >> 5) - 1] : before;
    if (i < n)
        f.run[i] = (uint32_t)(i - excl - 1);
    if (i == n - 1)
        f.run[n] = (uint32_t)(n - 1 - incl);
    if (b == nb - 1 && t < 3) {
        unsigned c = 0;
        for (int k = 0; k < nb; k++)
            c += st.cnt[t * H264_SCAN_BLOCKS + k];
        f.counts[t] = c;
    }
}

/* A thread an MB; each warp adds its MBs' lengths into their block's sum
 * (the scan's first pass, folded in). */
__global__ static void k_cavlc(struct h264_frame f, int idr, uint64_t *tmp)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x, n = f.mbw * f.mbh;
    unsigned nb = 0;
    if (i < n) {
        cavlc_mb(&f, idr, i);
        nb = f.nbits[i];
    }
    nb = __reduce_add_sync(0xffffffffu, nb);
    if ((threadIdx.x & 31) == 0 && nb)
        atomicAdd(&scan_tmp_of(tmp).sum[i / SCAN_THREADS], (unsigned long long)nb);
}

/* The prefix sum's second pass: pos[i] from the blocks before and the block's scan. */
__global__ static void k_scan(struct h264_frame f, uint64_t *tmp)
{
    __shared__ unsigned long long warp_tot[32], before;
    struct scan_tmp st = scan_tmp_of(tmp);
    int t = threadIdx.x, b = blockIdx.x, n = f.mbw * f.mbh, i = b * SCAN_THREADS + t;
    if (t < 32) {
        unsigned long long s = 0;
        for (int k = t; k < b; k += 32)
            s += st.sum[k];
        for (int off = 16; off; off >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, off);
        if (t == 0)
            before = s;
    }
    unsigned long long v = i < n ? f.nbits[i] : 0;
    __syncthreads();
    unsigned long long incl = block_sum_scan(v, warp_tot) + before;
    if (i < n)
        f.pos[i] = incl - v;
    if (i == n - 1)
        f.pos[n] = incl;
}

/* The slices' places: one thread walks them (at most mbh slices). */
__global__ static void k_slices(struct h264_frame f, int idr) { slices_place(&f, idr); }

/* ref_h264_clear's bytes, a thread a byte over a fixed grid: the end is
 * on the device (sbyte[slices]), so the host need not wait for it. */
__global__ static void k_clear(struct h264_frame f, uint8_t *out, int pad)
{
    uint64_t end = f.sbyte[f.slices] + (uint64_t)pad;
    for (uint64_t k = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; k < end;
         k += (uint64_t)gridDim.x * blockDim.x)
        out[k] = 0;
}

/* A thread an MB, then a thread a slice's end. */
__global__ static void k_pack(struct h264_frame f, uint8_t *out, int idr)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x, n = f.mbw * f.mbh;
    if (i < n)
        pack_mb(&f, out, i);
    else if (i < n + f.slices)
        pack_slice_end(&f, out, idr, i - n);
}

static unsigned scan_blocks(const struct h264_frame *f)
{
    return (unsigned)((f->mbw * f->mbh + SCAN_THREADS - 1) / SCAN_THREADS);
}

extern "C" int cu_h264_skipruns(const struct h264_frame *f, uint64_t *tmp, cudaStream_t s,
                                vr_err *err)
{
    struct scan_tmp st = scan_tmp_of(tmp);
    cudaError_t e = cudaMemsetAsync(st.last, 0xff, H264_SCAN_BLOCKS * sizeof *st.last, s);
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "matte encoder: skip runs: %s", cudaGetErrorString(e));
    k_runs_blocks<<<scan_blocks(f), SCAN_THREADS, 0, s>>>(*f, tmp);
    k_runs<<<scan_blocks(f), SCAN_THREADS, 0, s>>>(*f, tmp);
    return launched("skip runs", err);
}

extern "C" int cu_h264_cavlc(const struct h264_frame *f, int idr, uint64_t *tmp, cudaStream_t s,
                             vr_err *err)
{
    int n = f->mbw * f->mbh;
    k_cavlc<<<(n + 63) / 64, 64, 0, s>>>(*f, idr, tmp);
    return launched("cavlc", err);
}

extern "C" int cu_h264_scan(const struct h264_frame *f, uint64_t *tmp, cudaStream_t s,
                            vr_err *err)
{
    k_scan<<<scan_blocks(f), SCAN_THREADS, 0, s>>>(*f, tmp);
    return launched("scan", err);
}

extern "C" int cu_h264_slices(const struct h264_frame *f, int idr, cudaStream_t s, vr_err *err)
{
    k_slices<<<1, 1, 0, s>>>(*f, idr);
    return launched("slices", err);
}

extern "C" int cu_h264_clear(const struct h264_frame *f, uint8_t *out, int pad, cudaStream_t s,
                             vr_err *err)
{
    k_clear<<<264, 256, 0, s>>>(*f, out, pad);
    return launched("clear", err);
}

extern "C" int cu_h264_pack(const struct h264_frame *f, uint8_t *out, int idr, cudaStream_t s,
                            vr_err *err)
{
    int n = f->mbw * f->mbh + f->slices;
    k_pack<<<(n + 127) / 128, 128, 0, s>>>(*f, out, idr);
    return launched("pack", err);
}
