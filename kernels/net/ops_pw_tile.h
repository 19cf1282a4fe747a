/*
 * ops_pw_tile.h - how the pointwise launcher (cu_pointwise_dt,
 * ops_pointwise.cu) tiles a step: pixels a block, slices of the output
 * channels, threads and shared memory. Plain C, so the planner's tests
 * (t-net-plan-fit.c) can tell without a GPU which steps of a plan the
 * kernels take: the launcher and they share this one arithmetic.
 */
#ifndef VR_OPS_PW_TILE_H
#define VR_OPS_PW_TILE_H

#include <stddef.h>

#define PW_MAX_SMEM (200 * 1024)   /* the kernels' dynamic shared memory limit */
/* k_pw_mma stages a step's whole weights (as float16 hi / lo halves) in
 * every block; past this many bytes of them its blocks hold 16 pixels and
 * the staging outweighs the product, so k_pw_gemm takes the step (the Pose
 * detector's 192->192 and 480->80 at 14x14: 0.70 ms each at 145 crops,
 * H200). The selfie models' largest is 20 KB. */
#define PW_MMA_MAX_W (64 * 1024)

/* Which kernel a step takes (pw_tile.kind). */
#define PW_CORES 0    /* k_pointwise: CUDA cores, inputs and weights in shared memory */
#define PW_MMA 1      /* k_pw_mma: cin a multiple of 8, tensor cores, the same */
#define PW_GLOBAL 2   /* k_pw_gemm: cin a multiple of 8, weights too big for shared
                       * memory or PW_MMA_MAX_W (the Pose models' 192->192, 80->480
                       * .. 1152->192), staged a slice
                       * at a time (its own tiling: pw_gemm_launch) */

struct pw_tile {
    int kind;       /* PW_CORES, PW_MMA or PW_GLOBAL */
    int P;          /* pixels a block */
    int PX;         /* k_pointwise: pixels a thread (1 or 4) */
    int threads;    /* k_pointwise's threads a block */
    size_t smem;    /* dynamic shared memory a block */
};

/* k_pw_mma's shared memory for a tile of P pixels: the tile [P][kp + 4],
 * the results [P][cout + 4], the bias, the weights' float16 hi / lo
 * halves [cout][kp + 8] (kp: cin padded to 16). */
static inline size_t pw_mma_smem(int cin, int cout, int P)
{
    const size_t kp = (size_t)(cin + 15) & ~(size_t)15;
    return ((size_t)P * (kp + 4) + (size_t)P * (cout + 4) + cout) * sizeof(float) +
           (size_t)2 * cout * (kp + 8) * 2;
}

/* The shared-memory kernels' tiling (cin, cout up to 1024); -1 when the
 * block would need more than PW_MAX_SMEM, or k_pw_mma more than
 * PW_MMA_MAX_W of weights. */
static inline int pw_tile_shared(int cin, int cout, size_t npix, struct pw_tile *t)
{
    if (cin > 1024 || cout > 1024)
        return -1;
    if ((cin & 7) == 0) {
        const size_t kp = (size_t)(cin + 15) & ~(size_t)15;
        if ((size_t)2 * cout * (kp + 8) * 2 > PW_MMA_MAX_W)
            return -1;
        /* 128-pixel tiles, smaller where the map would give fewer than two
         * blocks an SM (the 16x16 bottleneck) or the tile would not leave
         * room for two blocks */
        int P = 128;
        while (P > 16 && (npix / P < 264 || pw_mma_smem(cin, cout, P) > 100 * 1024))
            P /= 2;
        *t = (struct pw_tile){ PW_MMA, P, 1, 256, pw_mma_smem(cin, cout, P) };
        return t->smem <= PW_MAX_SMEM ? 0 : -1;
    }
    /* big maps: 4 pixels a thread, 128-pixel tiles; small ones (the 16x16
     * bottleneck): 1 pixel a thread and tiles small enough for ~2 blocks
     * per SM, so latency is hidden by more warps rather than more work */
    const int PX = npix >= (size_t)128 * 132 * 4 ? 4 : 1;
    int P = 128;
    while (P > 16 && ((P / PX) * (cout / 8) > (PX == 4 ? 256 : 512) ||
                      (PX == 1 && npix / P < 264)))
        P /= 2;
    size_t smem;
    for (;;) {
        smem = ((size_t)cin * (P + 4) + (size_t)cin * cout) * sizeof(float);
        if (smem <= 96 * 1024 || P <= 16)
            break;
        P /= 2;
    }
    *t = (struct pw_tile){ PW_CORES, P, PX, (P / PX) * (cout / 8), smem };
    return smem <= PW_MAX_SMEM && t->threads <= 512 ? 0 : -1;
}

/* The tiling of a step of npix pixels, cin -> cout (cout a multiple of 8,
 * both up to 4096): the shared-memory kernels where they fit, as before;
 * else, for cin a multiple of 8, k_pw_gemm (a tiled product, its tile
 * chosen by its launcher). 0, or -1 when no kernel takes it. */
static inline int pw_tile_of(int cin, int cout, size_t npix, struct pw_tile *t)
{
    if (cin <= 0 || cin > 4096 || cout <= 0 || cout > 4096 || (cout & 7) || npix == 0)
        return -1;
    if (pw_tile_shared(cin, cout, npix, t) == 0)
        return 0;
    if (cin & 7)
        return -1;
    *t = (struct pw_tile){ PW_GLOBAL, 1, 1, 256, 0 };
    return 0;
}

#endif
