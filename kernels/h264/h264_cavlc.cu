/*
 * h264_cavlc.cu - stages 2-5 of the matte encoder as CUDA kernels (twins
 * of h264_cavlc_ref.c): the skip runs and the prefix sum as one block of
 * 1024 threads (each a contiguous share of the MBs, then a scan across the
 * block: a frame has at most 262144 MBs, so a share is at most 256), the
 * codewords and the pack a thread an MB (h264_cavlc_impl.h).
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

__global__ static void k_skipruns(struct h264_frame f)
{
    __shared__ int last[SCAN_THREADS];
    __shared__ unsigned cnt[3];
    int t = threadIdx.x, n = f.mbw * f.mbh, c = (n + SCAN_THREADS - 1) / SCAN_THREADS;
    int a = t * c < n ? t * c : n, b = a + c < n ? a + c : n;
    if (t < 3)
        cnt[t] = 0;
    __syncthreads();
    int l = -1;
    unsigned k[3] = { 0, 0, 0 };
    for (int i = a; i < b; i++) {
        int ty = f.mb[i].type;
        if (ty != H264_MB_SKIP)
            l = i;
        k[ty]++;
    }
    for (int j = 0; j < 3; j++)
        if (k[j])
            atomicAdd(&cnt[j], k[j]);
    last[t] = l;
    __syncthreads();
    for (int off = 1; off < SCAN_THREADS; off <<= 1) { /* inclusive max-scan */
        int v = t >= off ? last[t - off] : -1;
        __syncthreads();
        if (v > last[t])
            last[t] = v;
        __syncthreads();
    }
    int prev = t > 0 ? last[t - 1] : -1; /* the last coded MB before this share */
    for (int i = a; i < b; i++) {
        f.run[i] = (uint32_t)(i - prev - 1);
        if (f.mb[i].type != H264_MB_SKIP)
            prev = i;
    }
    if (t == SCAN_THREADS - 1)
        f.run[n] = (uint32_t)(n - 1 - last[t]);
    if (t < 3)
        f.counts[t] = cnt[t];
}

__global__ static void k_cavlc(struct h264_frame f, int idr)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < f.mbw * f.mbh)
        cavlc_mb(&f, idr, i);
}

__global__ static void k_scan(struct h264_frame f)
{
    __shared__ unsigned long long sum[SCAN_THREADS];
    int t = threadIdx.x, n = f.mbw * f.mbh, c = (n + SCAN_THREADS - 1) / SCAN_THREADS;
    int a = t * c < n ? t * c : n, b = a + c < n ? a + c : n;
    unsigned long long s = 0;
    for (int i = a; i < b; i++)
        s += f.nbits[i];
    sum[t] = s;
    __syncthreads();
    for (int off = 1; off < SCAN_THREADS; off <<= 1) { /* inclusive sum-scan */
        unsigned long long v = t >= off ? sum[t - off] : 0;
        __syncthreads();
        sum[t] += v;
        __syncthreads();
    }
    unsigned long long p = t > 0 ? sum[t - 1] : 0;
    for (int i = a; i < b; i++) {
        f.pos[i] = p;
        p += f.nbits[i];
    }
    if (t == SCAN_THREADS - 1)
        f.pos[n] = sum[t];
}

/* ref_h264_clear's bytes, a thread a byte over a fixed grid: the end is
 * on the device (pos[n]), so the host need not wait for it. */
__global__ static void k_clear(struct h264_frame f, uint8_t *out, uint64_t from, uint64_t bit0,
                               int pad)
{
    uint64_t end = (bit0 + f.pos[f.mbw * f.mbh] + 7) / 8 + (uint64_t)pad;
    for (uint64_t k = from + blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; k < end;
         k += (uint64_t)gridDim.x * blockDim.x)
        out[k] = 0;
}

__global__ static void k_pack(struct h264_frame f, uint8_t *out, uint64_t bit0)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < f.mbw * f.mbh)
        pack_mb(&f, out, bit0, i);
}

extern "C" int cu_h264_skipruns(const struct h264_frame *f, cudaStream_t s, vr_err *err)
{
    k_skipruns<<<1, SCAN_THREADS, 0, s>>>(*f);
    return launched("skip runs", err);
}

extern "C" int cu_h264_cavlc(const struct h264_frame *f, int idr, cudaStream_t s, vr_err *err)
{
    int n = f->mbw * f->mbh;
    k_cavlc<<<(n + 63) / 64, 64, 0, s>>>(*f, idr);
    return launched("cavlc", err);
}

extern "C" int cu_h264_scan(const struct h264_frame *f, cudaStream_t s, vr_err *err)
{
    k_scan<<<1, SCAN_THREADS, 0, s>>>(*f);
    return launched("scan", err);
}

extern "C" int cu_h264_clear(const struct h264_frame *f, uint8_t *out, uint64_t from,
                             uint64_t bit0, int pad, cudaStream_t s, vr_err *err)
{
    k_clear<<<264, 256, 0, s>>>(*f, out, from, bit0, pad);
    return launched("clear", err);
}

extern "C" int cu_h264_pack(const struct h264_frame *f, uint8_t *out, uint64_t bit0,
                            cudaStream_t s, vr_err *err)
{
    int n = f->mbw * f->mbh;
    k_pack<<<(n + 127) / 128, 128, 0, s>>>(*f, out, bit0);
    return launched("pack", err);
}
