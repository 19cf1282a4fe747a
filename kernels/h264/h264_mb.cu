/*
 * h264_mb.cu - stages 0 and 1 of the matte encoder as CUDA kernels (twins
 * of h264_mb_ref.c): a thread a pixel for the load, a thread an MB for the
 * per-MB code of h264_mb_impl.h; an IDR's MBs one anti-diagonal a launch
 * (an MB predicts from its left, top and top-left neighbours).
 */
#include "h264_cuda.h"
#include "h264_mb_impl.h"

static int launched(const char *what, vr_err *err)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "matte encoder: %s: %s", what, cudaGetErrorString(e));
    return 0;
}

__global__ static void k_load(struct h264_frame f, const uint8_t *y, int yls, int w, int h)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x, py = blockIdx.y;
    if (px < f.mbw * 16)
        load_px(&f, y, yls, w, h, px, py);
}

__global__ static void k_inter(struct h264_frame f)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < f.mbw * f.mbh)
        inter_mb(&f, i % f.mbw, i / f.mbw);
}

__global__ static void k_intra(struct h264_frame f, int d, int y0)
{
    int my = y0 + blockIdx.x * blockDim.x + threadIdx.x, mx = d - my;
    if (my < f.mbh && mx >= 0 && mx < f.mbw)
        intra_mb(&f, mx, my);
}

extern "C" int cu_h264_load(const struct h264_frame *f, const uint8_t *y, int yls, int w, int h,
                            cudaStream_t s, vr_err *err)
{
    dim3 g((unsigned)(f->mbw * 16 + 255) / 256, (unsigned)f->mbh * 16);
    k_load<<<g, 256, 0, s>>>(*f, y, yls, w, h);
    return launched("load", err);
}

extern "C" int cu_h264_inter(const struct h264_frame *f, cudaStream_t s, vr_err *err)
{
    int n = f->mbw * f->mbh;
    k_inter<<<(n + 63) / 64, 64, 0, s>>>(*f);
    return launched("inter", err);
}

extern "C" int cu_h264_intra(const struct h264_frame *f, int d, cudaStream_t s, vr_err *err)
{
    /* the diagonal's rows: my from max(0, d - mbw + 1) to min(d, mbh - 1) */
    int y0 = d - f->mbw + 1 > 0 ? d - f->mbw + 1 : 0, y1 = d < f->mbh - 1 ? d : f->mbh - 1;
    int n = y1 - y0 + 1;
    if (n <= 0)
        return 0;
    k_intra<<<(n + 31) / 32, 32, 0, s>>>(*f, d, y0);
    return launched("intra", err);
}
