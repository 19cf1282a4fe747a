/*
 * g-h264-encode.c - the matte encoder on the GPU (the .cu kernels of kernels/h264)
 * against its C twin: every access unit byte for byte and every
 * reconstruction equal, on random masks (soft moving edges, noise at QP 0
 * and 26, flat, a texture moving as a whole (searched vectors up to the
 * picture's edges), sizes that are not whole MBs, back-to-back IDRs, a
 * 4096x2048 frame of the product's size) and on a real matte (the bundled
 * side-by-side clip through `vr-worker process --cpu`); the frame given
 * from device memory gives the same bytes as from the host, and queued
 * (h264enc_queue) the same packets as frame by frame. NVDEC (libavcodec's
 * cuda hwaccel, the driver's libnvcuvid) decodes the CUDA encoder's stream
 * to exactly its reconstruction, chroma 128, on the same kinds of frames.
 */
#include "h264enc.h"
#include "util-h264.h"
#include "util-video.h"

#include <criterion/criterion.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(g_h264_encode, .timeout = 300);

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* kind 0: a soft disc moving `step` px a frame; 1: noise; 2: flat 255;
 * 3: a smooth texture moving `step` px right and step / 2 up a frame (the
 * whole picture takes searched vectors, up to its edges) */
static uint8_t *masks(int kind, int n, int w, int h, int step)
{
    uint8_t *f = malloc((size_t)n * w * h);
    cr_assert(f);
    for (int i = 0; i < n; i++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                double cx = w / 3.0 + i * step, cy = h / 2.0, rad = h / 3.0;
                double d = sqrt((x - cx) * (x - cx) + (y - cy) * (y - cy)) - rad;
                double u = x - i * step, t = y + i * (step / 2);
                double tex = 128 + 60 * sin(u / 23.0 * 2 * M_PI) + 40 * cos(t / 37.0 * 2 * M_PI);
                uint8_t v = kind == 1 ? (uint8_t)rnd() : kind == 2 ? 255
                          : kind == 3 ? (uint8_t)tex
                          : (uint8_t)(d < -4 ? 255 : d > 4 ? 0 : 255 * (4 - d) / 8);
                f[(size_t)i * w * h + (size_t)y * w + x] = v;
            }
    return f;
}

/* The slices a frame of the encoders that twins() and nvdec() open
 * (h264enc_opts slices; 0: the default). */
static int twin_slices;

/* The C twin (*c) and the CUDA encoder on GPU 0 (*g) for w x h at qp. */
static void twins(int w, int h, int qp, const char *what, struct h264enc **c, struct h264enc **g)
{
    vr_err err = { 0 };
    struct h264enc_opts o = { .w = w, .h = h, .qp = qp, .fps_num = 60, .fps_den = 1, .full_range = 1,
                              .slices = twin_slices };
    cr_assert_eq(h264enc_new(&o, c, &err), 0, "%s", err.msg);
    o.use_gpu = 1;
    o.gpu = 0;
    cr_assert_eq(h264enc_new(&o, g, &err), 0, "%s: %s", what, err.msg);
}

static struct h264enc_stats nvdec(const uint8_t *f, int n, int w, int h, int qp, const uint8_t *idr,
                                  const char *what);

/* The C twin's MB counts of the last call of same(). */
static struct h264enc_stats same_st;
/* The CUDA encoder's P frames launched as a graph in the last same() or
 * same_queued(). */
static long long same_graphs;

/* CPU and GPU encoders on the same frames: equal bytes and recons. With
 * dev, the GPU's frames come from device memory. Returns the GPU's bytes. */
static long long same(const uint8_t *f, int n, int w, int h, int qp, const uint8_t *idr, int dev,
                      const char *what)
{
    struct h264enc *c = NULL, *g = NULL;
    vr_err err = { 0 };
    twins(w, h, qp, what, &c, &g);
    uint8_t *d = NULL;
    if (dev)
        cr_assert_eq(cudaMalloc((void **)&d, (size_t)w * h), cudaSuccess);
    long long bytes = 0;
    for (int i = 0; i < n; i++) {
        const uint8_t *src = f + (size_t)i * w * h, *pc, *pg;
        int sc, sg, kc, kg, k = idr ? idr[i] : i == 0;
        cr_assert_eq(h264enc_frame(c, src, w, k, &pc, &sc, &kc, &err), 0, "%s", err.msg);
        int rc;
        if (dev) {
            cr_assert_eq(cudaMemcpy(d, src, (size_t)w * h, cudaMemcpyHostToDevice), cudaSuccess);
            /* from pageable memory cudaMemcpy may return before its DMA
             * lands, and the encoder's stream does not wait for the legacy
             * one: the frame must be whole when it is handed over (the
             * pipeline's segmentation waits for its own stream likewise) */
            cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
            rc = h264enc_frame_dev(g, d, w, k, &pg, &sg, &kg, &err);
        } else {
            rc = h264enc_frame(g, src, w, k, &pg, &sg, &kg, &err);
        }
        cr_assert_eq(rc, 0, "%s: frame %d: %s", what, i, err.msg);
        cr_assert_eq(kc, kg);
        cr_assert_eq(sg, sc, "%s: frame %d: %d bytes on the GPU, %d on the CPU", what, i, sg, sc);
        int first = -1;
        for (int b = 0; b < sc && first < 0; b++)
            if (pc[b] != pg[b])
                first = b;
        cr_assert_eq(first, -1, "%s: frame %d: byte %d of %d differs", what, i, first, sc);
        bytes += sg;
        int lc, lg;
        const uint8_t *rc_ = h264enc_recon(c, &lc), *rg = h264enc_recon(g, &lg);
        cr_assert(rg && lc == lg);
        cr_assert_eq(memcmp(rc_, rg, (size_t)lc * ((h + 15) / 16 * 16)), 0,
                     "%s: frame %d: reconstructions differ", what, i);
    }
    struct h264enc_stats sc, sg;
    h264enc_stats(c, &sc);
    h264enc_stats(g, &sg);
    cr_assert(sc.mb_skip == sg.mb_skip && sc.mb_p16 == sg.mb_p16 && sc.mb_i16 == sg.mb_i16,
              "%s: MB counts differ", what);
    same_st = sc;
    same_graphs = sg.graph_frames;
    cudaFree(d);
    h264enc_free(&c);
    h264enc_free(&g);
    return bytes;
}

Test(g_h264_encode, moving_edges_noise_flat_and_odd_sizes)
{
    uint8_t idr[12] = { [0] = 1, [5] = 1, [6] = 1 };
    uint8_t *f = masks(0, 12, 320, 240, 3);
    same(f, 12, 320, 240, 25, idr, 0, "moving disc");
    same(f, 12, 320, 240, 25, idr, 1, "moving disc from device memory");
    free(f);
    f = masks(1, 3, 64, 48, 0);
    same(f, 3, 64, 48, 0, NULL, 0, "noise QP 0");
    same(f, 3, 64, 48, 26, NULL, 0, "noise QP 26");
    free(f);
    f = masks(2, 3, 96, 64, 0);
    same(f, 3, 96, 64, 28, NULL, 0, "flat");
    free(f);
    int sizes[][2] = { { 50, 34 }, { 16, 16 }, { 130, 66 } };
    for (int s = 0; s < 3; s++) {
        f = masks(0, 4, sizes[s][0], sizes[s][1], 2);
        same(f, 4, sizes[s][0], sizes[s][1], 24, NULL, 0, "odd size");
        free(f);
    }
}

Test(g_h264_encode, translated_content_searched_vectors)
{
    int steps[] = { 3, -5, 14 };
    for (int k = 0; k < 3; k++) {
        uint8_t *f = masks(3, 8, 176, 144, steps[k]);
        char what[48];
        snprintf(what, sizeof what, "texture moving %d px", steps[k]);
        same(f, 8, 176, 144, 26, NULL, k & 1, what);
        struct h264enc_stats st = nvdec(f, 8, 176, 144, 26, NULL, what);
        cr_assert(st.mb_skip > 0 && st.mb_p16 > 0, "%s: skip %lld, P16 %lld", what, st.mb_skip,
                  st.mb_p16);
        free(f);
    }
}

Test(g_h264_encode, product_size_4096x2048)
{
    uint8_t *f = masks(0, 3, 4096, 2048, 12);
    uint8_t idr[3] = { 1, 0, 0 };
    same(f, 3, 4096, 2048, 25, idr, 1, "4096x2048");
    free(f);
}

/* The queued encoder (h264enc_queue, h264enc_flush) against the C twin
 * frame by frame: the same packets in order, each with its own tag, none
 * lost at the flush. One device buffer holds every frame in turn, written
 * again as soon as the call returns: the call is done with y by then. */
static void same_queued(const uint8_t *f, int n, int w, int h, int qp, const uint8_t *idr, int dev,
                        const char *what)
{
    struct h264enc *c = NULL, *g = NULL;
    vr_err err = { 0 };
    twins(w, h, qp, what, &c, &g);
    uint8_t *d = NULL, **want = calloc((size_t)n, sizeof *want);
    int *wsz = calloc((size_t)n, sizeof *wsz), *wkey = calloc((size_t)n, sizeof *wkey);
    cr_assert(want && wsz && wkey);
    if (dev)
        cr_assert_eq(cudaMalloc((void **)&d, (size_t)w * h), cudaSuccess);
    for (int i = 0; i < n; i++) {
        const uint8_t *pc;
        cr_assert_eq(h264enc_frame(c, f + (size_t)i * w * h, w, idr ? idr[i] : i == 0, &pc,
                                   &wsz[i], &wkey[i], &err), 0, "%s", err.msg);
        want[i] = malloc((size_t)wsz[i]);
        memcpy(want[i], pc, (size_t)wsz[i]);
    }
    int got = 0;
    for (int i = 0; i <= n; i++) {
        const uint8_t *src = f + (size_t)i * w * h, *pg;
        int sg, kg, rc;
        int64_t tag = -1;
        if (i == n) {
            rc = h264enc_flush(g, &pg, &sg, &kg, &tag, &err);
        } else if (dev) {
            cr_assert_eq(cudaMemcpy(d, src, (size_t)w * h, cudaMemcpyHostToDevice), cudaSuccess);
            cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
            rc = h264enc_queue(g, d, w, 1, idr ? idr[i] : i == 0, 1000 + i, &pg, &sg, &kg, &tag,
                               &err);
        } else {
            rc = h264enc_queue(g, src, w, 0, idr ? idr[i] : i == 0, 1000 + i, &pg, &sg, &kg, &tag,
                               &err);
        }
        cr_assert_eq(rc, 0, "%s: frame %d: %s", what, i, err.msg);
        if (i < n && i > 0)
            cr_assert(h264enc_frame(g, src, w, 0, &pg, &sg, &kg, &err) < 0,
                      "%s: h264enc_frame while a frame is queued", what);
        if (!sg)
            continue;
        cr_assert_eq(tag, 1000 + got, "%s: packet %d has the tag %lld", what, got, (long long)tag);
        cr_assert_eq(kg, wkey[got]);
        cr_assert_eq(sg, wsz[got], "%s: packet %d: %d bytes, the twin's %d", what, got, sg, wsz[got]);
        cr_assert_eq(memcmp(pg, want[got], (size_t)sg), 0, "%s: packet %d differs", what, got);
        got++;
    }
    cr_assert_eq(got, n, "%s: %d packets of %d", what, got, n);
    int lc, lg;
    const uint8_t *rc_ = h264enc_recon(c, &lc), *rg = h264enc_recon(g, &lg);
    cr_assert(rg && lc == lg);
    cr_assert_eq(memcmp(rc_, rg, (size_t)lc * ((h + 15) / 16 * 16)), 0,
                 "%s: the last reconstructions differ", what);
    struct h264enc_stats sg;
    h264enc_stats(g, &sg);
    same_graphs = sg.graph_frames;
    for (int i = 0; i < n; i++)
        free(want[i]);
    free(want);
    free(wsz);
    free(wkey);
    cudaFree(d);
    h264enc_free(&c);
    h264enc_free(&g);
}

Test(g_h264_encode, queued_frames_give_the_same_packets)
{
    uint8_t idr[12] = { [0] = 1, [5] = 1, [6] = 1 };
    uint8_t *f = masks(0, 12, 320, 240, 3);
    same_queued(f, 12, 320, 240, 25, idr, 1, "moving disc, queued from device memory");
    same_queued(f, 12, 320, 240, 25, idr, 0, "moving disc, queued from host memory");
    same_queued(f, 1, 320, 240, 25, NULL, 1, "one frame, queued");
    free(f);
    f = masks(1, 3, 64, 48, 0);
    same_queued(f, 3, 64, 48, 0, NULL, 1, "noise QP 0, queued");
    free(f);
    f = masks(0, 4, 4096, 2048, 12);
    same_queued(f, 4, 4096, 2048, 25, NULL, 1, "4096x2048, queued");
    free(f);
}

/* The bundled side-by-side clip's matte (`vr-worker process --cpu`, FFV1):
 * its frames into *f, an IDR every 10 in idr; the frame count. */
static int real_matte(uint8_t **f, uint8_t *idr, int *w, int *h)
{
    char W[256], cmd[2048], out[300];
    tv_tmpdir(W, sizeof W);
    snprintf(out, sizeof out, "%s/matte.mkv", W);
    const char *bin = getenv("VR_BIN_DIR"), *data = getenv("VR_DATA_DIR");
    snprintf(cmd, sizeof cmd, "echo '{\"encoder\": \"ffv1\"}' > %s/c.json && '%s/vr-worker' process "
             "--cpu --profile fast -c %s/c.json --output mask '%s/tests/data/video/sbs.mkv' -o '%s' "
             "2>/dev/null", W, bin ? bin : "bin", W, data ? data : ".", out);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    struct tv_file m;
    cr_assert_eq(tv_read(out, 1, &m), 0);
    size_t fs = (size_t)m.w * m.h;
    *f = malloc(m.nframes * fs);
    cr_assert(*f);
    for (int i = 0; i < m.nframes; i++) {
        memcpy(*f + i * fs, m.luma[i], fs);
        idr[i] = i % 10 == 0;
    }
    int n = m.nframes;
    *w = m.w;
    *h = m.h;
    tv_free(&m);
    tv_rmdir(W);
    return n;
}

Test(g_h264_encode, real_matte)
{
    uint8_t *f, idr[TV_MAX_FRAMES] = { 0 };
    int w, h, n = real_matte(&f, idr, &w, &h);
    same(f, n, w, h, 25, idr, 0, "the sbs clip's matte");
    free(f);
}

/* The CUDA encoder's stream through NVDEC: every frame decoded, each equal
 * to the encoder's reconstruction, chroma 128. Returns the MB counts. */
static struct h264enc_stats nvdec(const uint8_t *f, int n, int w, int h, int qp, const uint8_t *idr,
                                  const char *what)
{
    struct th264_how how = { .gpu_encoder = 1, .nvdec = 1, .slices = twin_slices };
    struct th264_result r;
    cr_assert_eq(th264_roundtrip_with(f, n, w, h, qp, idr, &how, &r), 0, "%s: %s", what, r.err);
    cr_assert_eq(r.frames_decoded, n, "%s: NVDEC gave %d frames of %d", what, r.frames_decoded, n);
    cr_assert(r.dec_w == w && r.dec_h == h, "%s: decoded %dx%d", what, r.dec_w, r.dec_h);
    cr_assert_eq(r.luma_mismatch, 0, "%s: %d frames differ from the reconstruction, first %d", what,
                 r.luma_mismatch, r.first_bad);
    cr_assert_eq(r.chroma_mismatch, 0, "%s: chroma not 128 in %d frames", what, r.chroma_mismatch);
    return r.st;
}

Test(g_h264_encode, nvdec_decodes_the_reconstruction)
{
    uint8_t idr[TV_MAX_FRAMES] = { [0] = 1, [5] = 1, [6] = 1 };
    uint8_t *f = masks(0, 12, 320, 240, 3);
    struct h264enc_stats st = nvdec(f, 12, 320, 240, 25, idr, "moving disc");
    cr_assert(st.mb_skip > 0 && st.mb_p16 > 0 && st.mb_i16 > 0 && st.idr == 3,
              "moving disc: skip %lld, P16 %lld, I16 %lld", st.mb_skip, st.mb_p16, st.mb_i16);
    free(f);
    f = masks(1, 3, 64, 48, 0);
    nvdec(f, 3, 64, 48, 26, NULL, "noise");
    free(f);
    f = masks(2, 3, 96, 64, 0);
    nvdec(f, 3, 96, 64, 28, NULL, "all 255");
    memset(f, 0, 3 * 96 * 64);
    nvdec(f, 3, 96, 64, 28, NULL, "all 0");
    free(f);
    int sizes[][2] = { { 50, 34 }, { 130, 66 } }; /* NVDEC's H.264 floor is 48x16 */
    for (int s = 0; s < 2; s++) {
        f = masks(0, 4, sizes[s][0], sizes[s][1], 2);
        nvdec(f, 4, sizes[s][0], sizes[s][1], 24, NULL, "odd size");
        free(f);
    }
    f = masks(0, 3, 4096, 2048, 12);
    nvdec(f, 3, 4096, 2048, 25, NULL, "4096x2048");
    free(f);
    memset(idr, 0, sizeof idr);
    int w, h, n = real_matte(&f, idr, &w, &h);
    nvdec(f, n, w, h, 25, idr, "the sbs clip's matte");
    free(f);
}

/* I16 MBs of P frames in same()'s last run (its IDRs' MBs are all I16). */
static long long same_i16_in_p(int w, int h)
{
    return same_st.mb_i16 - same_st.idr * (long long)((w + 15) / 16) * ((h + 15) / 16);
}

/* Intra 16x16 MBs in P frames (VR_H264_INTRA_P=1: both encoders' default
 * then): the GPU's wavefront over the candidates (k_intra_rows, p 1) and
 * k_pfix against the twin's raster order, byte for byte; noise makes
 * neighbours of neighbours intra, so rows wait on each other; NVDEC
 * decodes the stream to the reconstruction. */
Test(g_h264_encode, intra_in_p_frames_same_bytes)
{
    cr_assert_eq(setenv("VR_H264_INTRA_P", "1", 1), 0);
    long long i16p = 0;
    uint8_t idr[12] = { [0] = 1, [5] = 1, [6] = 1 };
    uint8_t *f = masks(0, 12, 320, 240, 3);
    same(f, 12, 320, 240, 25, idr, 1, "intra in P: moving disc");
    i16p += same_i16_in_p(320, 240);
    nvdec(f, 12, 320, 240, 25, idr, "intra in P: moving disc");
    same_queued(f, 12, 320, 240, 25, idr, 1, "intra in P: moving disc, queued");
    free(f);
    f = masks(1, 3, 64, 48, 0);
    same(f, 3, 64, 48, 26, NULL, 0, "intra in P: noise QP 26");
    i16p += same_i16_in_p(64, 48);
    nvdec(f, 3, 64, 48, 26, NULL, "intra in P: noise");
    free(f);
    int steps[] = { 3, -5 };
    for (int k = 0; k < 2; k++) {
        f = masks(3, 8, 176, 144, steps[k]);
        same(f, 8, 176, 144, 26, NULL, k, "intra in P: texture moving");
        i16p += same_i16_in_p(176, 144);
        free(f);
    }
    int sizes[][2] = { { 50, 34 }, { 130, 66 } };
    for (int k = 0; k < 2; k++) {
        f = masks(1, 3, sizes[k][0], sizes[k][1], 0);
        same(f, 3, sizes[k][0], sizes[k][1], 30, NULL, 0, "intra in P: noise, odd size");
        i16p += same_i16_in_p(sizes[k][0], sizes[k][1]);
        free(f);
    }
    f = masks(1, 3, 4096, 2048, 0);
    same(f, 3, 4096, 2048, 26, NULL, 1, "intra in P: noise 4096x2048");
    i16p += same_i16_in_p(4096, 2048);
    free(f);
    f = masks(0, 3, 4096, 2048, 12);
    same(f, 3, 4096, 2048, 25, NULL, 1, "intra in P: 4096x2048");
    i16p += same_i16_in_p(4096, 2048);
    free(f);
    uint8_t ridr[TV_MAX_FRAMES] = { 0 };
    int w, h, n = real_matte(&f, ridr, &w, &h);
    same(f, n, w, h, 25, ridr, 0, "intra in P: the sbs clip's matte");
    i16p += same_i16_in_p(w, h);
    free(f);
    cr_log_info("intra in P: %lld I16 MBs in P frames", i16p);
    cr_assert(i16p > 0, "no MB of a P frame turned intra");
}

/* Slices (h264enc_opts slices): each slice's wavefront starts at its own
 * top row (k_intra_rows), and its predictions, runs and places
 * (k_slices, k_pack) are the twin's, byte for byte, for S not dividing the
 * MB rows (15 at 320x240) and a row a slice, intra in P on and off, frame
 * by frame and queued; NVDEC decodes each to the reconstruction. */
Test(g_h264_encode, slices_same_bytes)
{
    const int ss[] = { 1, 2, 4, 7, 15 };
    uint8_t idr[12] = { [0] = 1, [5] = 1, [6] = 1 };
    uint8_t *f = masks(0, 12, 320, 240, 3);
    for (int ip = 0; ip <= 1; ip++) {
        cr_assert_eq(setenv("VR_H264_INTRA_P", ip ? "1" : "0", 1), 0);
        for (size_t k = 0; k < sizeof ss / sizeof ss[0]; k++) {
            char what[64];
            snprintf(what, sizeof what, "%d slices, intra in P %s", ss[k], ip ? "on" : "off");
            twin_slices = ss[k];
            same(f, 12, 320, 240, 25, idr, (int)k & 1, what);
            same_queued(f, 12, 320, 240, 25, idr, 1, what);
            nvdec(f, 12, 320, 240, 25, idr, what);
        }
    }
    free(f);
    /* the product's size: one slice, 3 and 128 (a row each), noise (every
     * MB a candidate) and a moving disc */
    const int big[] = { 1, 3, 128 };
    cr_assert_eq(setenv("VR_H264_INTRA_P", "1", 1), 0);
    for (size_t k = 0; k < sizeof big / sizeof big[0]; k++) {
        char what[64];
        twin_slices = big[k];
        f = masks(1, 3, 4096, 2048, 0);
        snprintf(what, sizeof what, "4096x2048 noise, %d slices", big[k]);
        same(f, 3, 4096, 2048, 26, NULL, 1, what);
        free(f);
        f = masks(0, 3, 4096, 2048, 12);
        snprintf(what, sizeof what, "4096x2048 disc, %d slices", big[k]);
        same(f, 3, 4096, 2048, 25, NULL, 1, what);
        free(f);
    }
    twin_slices = 0;
}

/* Both kernels of the intra stages (VR_H264_INTRA_LANES, h264_cuda.h):
 * the default's (k_intra_cands for intra in P, a candidate waiting on
 * its candidate neighbours' flags; intra_mb_lanes in the IDR's
 * wavefront) and the tenth pass's (0), each against the twin byte for
 * byte: a moving disc at 320x240 (IDRs and P frames) and 4096x2048 (few
 * candidates: most neighbours final, their pixels read before the wait),
 * noise at 4096x2048 in 1 and 4 slices (every MB a candidate: every
 * candidate waits on three), the sbs clip's matte. */
Test(g_h264_encode, intra_kernels_same_bytes)
{
    cr_assert_eq(setenv("VR_H264_INTRA_P", "1", 1), 0);
    const char *lanes[] = { "1", "0" };
    const int ss[] = { 1, 4 };
    uint8_t idr[12] = { [0] = 1, [5] = 1, [6] = 1 };
    for (int l = 0; l < 2; l++) {
        char what[96];
        cr_assert_eq(setenv("VR_H264_INTRA_LANES", lanes[l], 1), 0);
        uint8_t *f = masks(0, 12, 320, 240, 3);
        snprintf(what, sizeof what, "intra lanes %s: moving disc", lanes[l]);
        same(f, 12, 320, 240, 25, idr, 1, what);
        same_queued(f, 12, 320, 240, 25, idr, 1, what);
        free(f);
        f = masks(0, 3, 4096, 2048, 12);
        snprintf(what, sizeof what, "intra lanes %s: 4096x2048 disc", lanes[l]);
        same(f, 3, 4096, 2048, 25, NULL, 1, what);
        free(f);
        for (size_t k = 0; k < sizeof ss / sizeof ss[0]; k++) {
            twin_slices = ss[k];
            f = masks(1, 3, 4096, 2048, 0);
            snprintf(what, sizeof what, "intra lanes %s: 4096x2048 noise, %d slices", lanes[l], ss[k]);
            same(f, 3, 4096, 2048, 26, NULL, 1, what);
            free(f);
        }
        twin_slices = 0;
        uint8_t ridr[TV_MAX_FRAMES] = { 0 };
        int w, h, n = real_matte(&f, ridr, &w, &h);
        snprintf(what, sizeof what, "intra lanes %s: the sbs clip's matte", lanes[l]);
        same(f, n, w, h, 25, ridr, 0, what);
        free(f);
    }
    cr_assert_eq(unsetenv("VR_H264_INTRA_LANES"), 0);
}

/* Both launch paths (VR_H264_GRAPH, h264enc_gpu.c): a P frame's stages
 * as one CUDA graph (the default: captured for each reference and slot,
 * replayed) and launched one by one (0), each against the twin byte for
 * byte, frame by frame and queued, from device and host memory, intra in
 * P on and off, 1 and 4 slices, IDRs between P frames (the IDR's stages
 * launched one by one, the graphs replayed after it), and the sbs clip's
 * matte; the graph path must have run as a graph. */
Test(g_h264_encode, graph_and_launches_same_bytes)
{
    const char *graph[] = { "1", "0" };
    uint8_t idr[12] = { [0] = 1, [5] = 1, [6] = 1 };
    for (int gi = 0; gi < 2; gi++) {
        const int on = graph[gi][0] == '1';
        cr_assert_eq(setenv("VR_H264_GRAPH", graph[gi], 1), 0);
        for (int ip = 0; ip <= 1; ip++) {
            char what[96];
            cr_assert_eq(setenv("VR_H264_INTRA_P", ip ? "1" : "0", 1), 0);
            uint8_t *f = masks(0, 12, 320, 240, 3);
            snprintf(what, sizeof what, "graph %s, intra in P %d: moving disc", graph[gi], ip);
            same(f, 12, 320, 240, 25, idr, 1, what);
            cr_assert(on ? same_graphs == 9 : same_graphs == 0, "%s: %lld P frames as a graph",
                      what, same_graphs);
            same_queued(f, 12, 320, 240, 25, idr, 1, what);
            cr_assert(on ? same_graphs == 9 : same_graphs == 0, "%s, queued: %lld P frames as a graph",
                      what, same_graphs);
            same_queued(f, 12, 320, 240, 25, idr, 0, what);
            free(f);
            for (int s = 1; s <= 4; s += 3) {
                twin_slices = s;
                f = masks(1, 3, 4096, 2048, 0);
                snprintf(what, sizeof what, "graph %s, intra in P %d: 4096x2048 noise, %d slices",
                         graph[gi], ip, s);
                same(f, 3, 4096, 2048, 26, NULL, 1, what);
                same_queued(f, 3, 4096, 2048, 26, NULL, 1, what);
                free(f);
            }
            twin_slices = 0;
        }
        uint8_t ridr[TV_MAX_FRAMES] = { 0 };
        uint8_t *f;
        int w, h, n = real_matte(&f, ridr, &w, &h);
        char what[96];
        snprintf(what, sizeof what, "graph %s: the sbs clip's matte", graph[gi]);
        same(f, n, w, h, 25, ridr, 1, what);
        cr_assert(on ? same_graphs > 0 : same_graphs == 0, "%s: %lld P frames as a graph", what,
                  same_graphs);
        same_queued(f, n, w, h, 25, ridr, 1, what);
        free(f);
    }
    cr_assert_eq(unsetenv("VR_H264_GRAPH"), 0);
    cr_assert_eq(unsetenv("VR_H264_INTRA_P"), 0);
}

/* Both bit writers of k_cavlc and k_pack (VR_H264_CAVLC_WORDS,
 * h264_bits.h): the word writer (the default: bits gathered in a
 * register, stored a word at a time) and the twins' byte writer (0), each
 * against the twin byte for byte: noise at QP 0 (levels of every length,
 * the escapes) and at QP 26 in 4096x2048 in 4 slices, a moving disc
 * (skip runs, slice ends), IDRs and P frames, intra in P on and off, and
 * the sbs clip's matte. */
Test(g_h264_encode, cavlc_writers_same_bytes)
{
    const char *words[] = { "1", "0" };
    uint8_t idr[12] = { [0] = 1, [5] = 1, [6] = 1 };
    for (int wi = 0; wi < 2; wi++) {
        char what[96];
        cr_assert_eq(setenv("VR_H264_CAVLC_WORDS", words[wi], 1), 0);
        for (int ip = 0; ip <= 1; ip++) {
            cr_assert_eq(setenv("VR_H264_INTRA_P", ip ? "1" : "0", 1), 0);
            uint8_t *f = masks(1, 3, 64, 48, 0);
            snprintf(what, sizeof what, "cavlc words %s, intra in P %d: noise QP 0", words[wi], ip);
            same(f, 3, 64, 48, 0, NULL, 1, what);
            free(f);
            f = masks(0, 12, 320, 240, 3);
            snprintf(what, sizeof what, "cavlc words %s, intra in P %d: moving disc", words[wi], ip);
            same(f, 12, 320, 240, 25, idr, 1, what);
            same_queued(f, 12, 320, 240, 25, idr, 1, what);
            free(f);
        }
        twin_slices = 4;
        uint8_t *f = masks(1, 3, 4096, 2048, 0);
        snprintf(what, sizeof what, "cavlc words %s: 4096x2048 noise, 4 slices", words[wi]);
        same(f, 3, 4096, 2048, 26, NULL, 1, what);
        free(f);
        twin_slices = 0;
        uint8_t ridr[TV_MAX_FRAMES] = { 0 };
        int w, h, n = real_matte(&f, ridr, &w, &h);
        snprintf(what, sizeof what, "cavlc words %s: the sbs clip's matte", words[wi]);
        same(f, n, w, h, 25, ridr, 1, what);
        free(f);
    }
    cr_assert_eq(unsetenv("VR_H264_CAVLC_WORDS"), 0);
    cr_assert_eq(unsetenv("VR_H264_INTRA_P"), 0);
}
