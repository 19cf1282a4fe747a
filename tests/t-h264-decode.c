/*
 * t-h264-decode.c - the matte encoder's stream (kernels/h264, the C twin)
 * decodes with libavcodec to exactly the encoder's own reconstruction:
 * on random masks (soft moving edges, noise, all 0, all 255, sizes that are
 * not whole macroblocks, IDRs in the middle) and on the mattes of the
 * bundled clips. Every MB kind (I16x16, P16x16, P_Skip) is counted and
 * must occur where the content asks for it; moving content must be coded
 * with searched vectors (nonzero, up to the picture's edges), as the
 * decoder reads them.
 */
#include "util-h264.h"
#include "util-redis.h"
#include "util-video.h"

#include <criterion/criterion.h>
#include <libavcodec/avcodec.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

TestSuite(h264_decode, .timeout = 240);

/* ---- masks ---- */

/* A disc of radius rad moving right by `step` pixels a frame, with a soft
 * 8-pixel edge: what a matte of a person looks like. */
static uint8_t *moving_disc(int n, int w, int h, int step)
{
    uint8_t *f = malloc((size_t)n * w * h);
    cr_assert(f);
    for (int i = 0; i < n; i++) {
        double cx = w / 3.0 + i * step, cy = h / 2.0, rad = h / 3.0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                double d = sqrt((x - cx) * (x - cx) + (y - cy) * (y - cy)) - rad;
                double v = d < -4 ? 255 : d > 4 ? 0 : 255 * (4 - d) / 8;
                f[(size_t)i * w * h + (size_t)y * w + x] = (uint8_t)(v + 0.5);
            }
    }
    return f;
}

static uint8_t *noise(int n, int w, int h, unsigned seed)
{
    uint8_t *f = malloc((size_t)n * w * h);
    cr_assert(f);
    srand(seed);
    for (size_t k = 0; k < (size_t)n * w * h; k++)
        f[k] = (uint8_t)(rand() & 255);
    return f;
}

static uint8_t *flat(int n, int w, int h, int v)
{
    uint8_t *f = malloc((size_t)n * w * h);
    cr_assert(f);
    memset(f, v, (size_t)n * w * h);
    return f;
}

/* A smooth texture (periods of 23 to 61 pixels) moving by (dx, dy) pixels
 * a frame: a whole picture of searched vectors, new content at two edges. */
static uint8_t *translated(int n, int w, int h, int dx, int dy)
{
    uint8_t *f = malloc((size_t)n * w * h);
    cr_assert(f);
    for (int i = 0; i < n; i++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                double u = x - i * dx, v = y - i * dy;
                double t = 128 + 60 * sin(u / 23.0 * 2 * M_PI) + 40 * cos(v / 37.0 * 2 * M_PI) +
                           25 * sin((u + v) / 61.0 * 2 * M_PI);
                f[(size_t)i * w * h + (size_t)y * w + x] = (uint8_t)(t < 0 ? 0 : t > 255 ? 255 : t);
            }
    return f;
}

/* k discs with soft edges, each at its own random place, size and
 * velocity (up to 7 pixels a frame each way), on 0 or 255; a frame in
 * three gets a sprinkle of noise. */
static uint8_t *random_discs(int n, int w, int h, int k, unsigned seed)
{
    uint8_t *f = malloc((size_t)n * w * h);
    cr_assert(f);
    srand(seed);
    double d[8][5]; /* cx, cy, r, vx, vy */
    for (int j = 0; j < k && j < 8; j++) {
        d[j][0] = rand() % w;
        d[j][1] = rand() % h;
        d[j][2] = 4 + rand() % (w / 3 + 1);
        d[j][3] = rand() % 15 - 7;
        d[j][4] = rand() % 15 - 7;
    }
    int bg = rand() & 1 ? 255 : 0;
    for (int i = 0; i < n; i++) {
        uint8_t *p = f + (size_t)i * w * h;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                double v = bg;
                for (int j = 0; j < k && j < 8; j++) {
                    double cx = d[j][0] + i * d[j][3], cy = d[j][1] + i * d[j][4];
                    double e = sqrt((x - cx) * (x - cx) + (y - cy) * (y - cy)) - d[j][2];
                    if (e < 3)
                        v = e < -3 ? 255 - bg : (255 - bg) + (bg - (255 - bg)) * (e + 3) / 6;
                }
                p[(size_t)y * w + x] = (uint8_t)(v + 0.5);
            }
        if (i % 3 == 2)
            for (int s = 0; s < w * h / 50; s++)
                p[rand() % (w * h)] = (uint8_t)(rand() & 255);
    }
    return f;
}

/* Round trip (coded as how says) with every frame equal to the recon, the
 * size and profile right. */
static struct th264_result exact_how(const uint8_t *frames, int n, int w, int h, int qp,
                                     const uint8_t *idr, const struct th264_how *how,
                                     const char *what)
{
    struct th264_result r;
    int rc = th264_roundtrip_with(frames, n, w, h, qp, idr, how, &r);
    cr_assert_eq(rc, 0, "%s: %s", what, r.err);
    cr_assert_eq(r.frames_decoded, n, "%s: %d frames decoded of %d", what, r.frames_decoded, n);
    cr_assert_eq(r.luma_mismatch, 0, "%s: %d frames decode to other luma than the encoder's "
                 "reconstruction, the first %d", what, r.luma_mismatch, r.first_bad);
    cr_assert_eq(r.chroma_mismatch, 0, "%s: chroma not 128 in %d frames", what, r.chroma_mismatch);
    cr_assert(r.dec_w == w && r.dec_h == h, "%s: decoded as %dx%d, not %dx%d", what, r.dec_w,
              r.dec_h, w, h);
    cr_assert_eq(r.profile, FF_PROFILE_H264_CONSTRAINED_BASELINE, "%s: profile %d", what, r.profile);
    return r;
}

static struct th264_result exact(const uint8_t *frames, int n, int w, int h, int qp,
                                 const uint8_t *idr, const char *what)
{
    struct th264_how how = { 0 };
    return exact_how(frames, n, w, h, qp, idr, &how, what);
}

/* I16 MBs of a round trip's P frames (its IDRs' MBs are all I16). */
static long long i16_in_p(const struct th264_result *r, int w, int h)
{
    return r->st.mb_i16 - r->st.idr * (long long)((w + 15) / 16) * ((h + 15) / 16);
}

Test(h264_decode, moving_edges_code_skip_p16_and_i16)
{
    int n = 12, w = 320, h = 240;
    uint8_t *f = moving_disc(n, w, h, 3);
    uint8_t idr[12] = { [0] = 1, [6] = 1 };
    struct th264_how how = { .intra_p = -1 }; /* P frames of skips and P16 alone */
    struct th264_result r = exact_how(f, n, w, h, 25, idr, &how, "moving disc");
    cr_assert_eq(r.st.idr, 2, "IDRs: %lld", r.st.idr);
    cr_assert_eq(r.st.p, 10);
    cr_assert_eq(r.st.mb_i16, 2 * 20 * 15, "I16 MBs: %lld", r.st.mb_i16);
    cr_assert(r.st.mb_p16 > 0 && r.st.mb_skip > r.st.mb_p16,
              "a moving edge: P16 %lld, skips %lld", r.st.mb_p16, r.st.mb_skip);
    cr_assert(r.psnr > 35, "PSNR %.2f dB", r.psnr);
    cr_assert_eq(r.level, 13, "level %d for 320x240 at 30 fps", r.level);
    /* the edge's MBs follow the disc: searched vectors, 3 pixels right */
    cr_assert(r.mv_nonzero > 0 && r.mv_max <= 16, "vectors: %lld nonzero, largest %d px",
              r.mv_nonzero, r.mv_max);
    free(f);
}

/* The whole picture moves: every MB's vector is searched, P_Skip MBs carry
 * the predicted (nonzero) vector, and MBs at the picture's edges take
 * vectors whose source block lies on the edge (no edge extension). */
Test(h264_decode, translated_content_codes_searched_vectors)
{
    int moves[][2] = { { 3, 2 }, { -5, 1 }, { 2, -7 }, { -1, -1 } };
    for (size_t k = 0; k < sizeof moves / sizeof moves[0]; k++) {
        int n = 8, w = 176, h = 144;
        uint8_t *f = translated(n, w, h, moves[k][0], moves[k][1]);
        char what[48];
        snprintf(what, sizeof what, "translated by (%d, %d)", moves[k][0], moves[k][1]);
        struct th264_result r = exact(f, n, w, h, 26, NULL, what);
        cr_log_info("%s: %lld bytes, PSNR %.2f dB, P16 %lld skip %lld, vectors %lld nonzero "
                    "(%lld at the edge, largest %d px)", what, r.bytes, r.psnr, r.st.mb_p16,
                    r.st.mb_skip, r.mv_nonzero, r.mv_at_edge, r.mv_max);
        /* 7 P frames of 11x9 MBs: nearly all of them move */
        cr_assert(r.mv_nonzero > 7 * 99 / 2, "%s: %lld vectors nonzero", what, r.mv_nonzero);
        cr_assert(r.mv_at_edge > 0, "%s: no vector reaches the edge", what);
        cr_assert(r.st.mb_skip > 0, "%s: no P_Skip at a moving vector", what);
        cr_assert(r.psnr > 40, "%s: PSNR %.2f dB", what, r.psnr);
        free(f);
    }
}

/* Random discs (h264enc_opts intra_p as given); the I16 MBs of P frames
 * summed into *i16p. */
static void random_masks(int intra_p, long long *i16p)
{
    struct th264_how how = { .intra_p = intra_p };
    long long moved = 0;
    *i16p = 0;
    for (unsigned seed = 1; seed <= 12; seed++) {
        srand(seed * 7919);
        int w = 16 + 2 * (rand() % 100), h = 16 + 2 * (rand() % 70), k = 1 + rand() % 6;
        int n = 7, qp = 10 + rand() % 35;
        uint8_t *f = random_discs(n, w, h, k, seed);
        uint8_t idr[7] = { [0] = 1, [4] = (uint8_t)(seed & 1) };
        char what[64];
        snprintf(what, sizeof what, "seed %u: %dx%d, %d discs, QP %d", seed, w, h, k, qp);
        struct th264_result r = exact_how(f, n, w, h, qp, idr, &how, what);
        cr_log_info("%s: %lld vectors nonzero, P16 %lld, skip %lld, I16 in P %lld", what,
                    r.mv_nonzero, r.st.mb_p16, r.st.mb_skip, i16_in_p(&r, w, h));
        moved += r.mv_nonzero;
        *i16p += i16_in_p(&r, w, h);
        free(f);
    }
    cr_assert(moved > 0, "moving discs and no vector off zero");
}

Test(h264_decode, random_moving_masks)
{
    long long i16p;
    random_masks(0, &i16p);
}

/* Intra 16x16 MBs in P frames (h264enc_opts intra_p): an MB turning intra
 * predicts from its neighbours' final reconstructions, and the inter MBs
 * around it predict their vectors without it (refIdx -1): the decoder must
 * still see exactly the encoder's reconstruction. */
Test(h264_decode, random_moving_masks_with_intra_in_p)
{
    long long i16p;
    random_masks(1, &i16p);
    cr_assert(i16p > 0, "no MB of a P frame turned intra");
    random_masks(-1, &i16p);
    cr_assert_eq(i16p, 0, "intra_p off: %lld I16 MBs in P frames", i16p);
}

Test(h264_decode, noise_every_qp_class)
{
    int n = 4, w = 64, h = 48;
    uint8_t *f = noise(n, w, h, 7);
    /* low QPs give big levels (escape codes, suffixLength up to 6) */
    int qps[] = { 0, 6, 12, 20, 26, 33, 40, 51 };
    for (size_t q = 0; q < sizeof qps / sizeof qps[0]; q++) {
        char what[32];
        snprintf(what, sizeof what, "noise at QP %d", qps[q]);
        struct th264_how how = { .intra_p = -1 }; /* every P MB a P16: the levels' classes */
        struct th264_result r = exact_how(f, n, w, h, qps[q], NULL, &how, what);
        cr_assert_eq(r.st.mb_i16, 12);
        if (qps[q] < 30)
            cr_assert_eq(r.st.mb_p16, 36, "%s: P16 MBs %lld", what, r.st.mb_p16);
    }
    free(f);
}

Test(h264_decode, all_zero_and_all_255_skip_everything)
{
    int n = 5, w = 96, h = 64;
    for (int v = 0; v <= 255; v += 255) {
        uint8_t *f = flat(n, w, h, v);
        struct th264_result r = exact(f, n, w, h, 28, NULL, v ? "all 255" : "all 0");
        cr_assert_eq(r.st.mb_skip, 4 * 24, "%d: skips %lld", v, r.st.mb_skip);
        cr_assert_eq(r.st.mb_p16, 0);
        cr_assert_eq(r.psnr, 99, "a flat frame is coded exactly (%.2f dB)", r.psnr);
        free(f);
    }
}

Test(h264_decode, sizes_not_whole_macroblocks_are_cropped)
{
    int sizes[][2] = { { 50, 34 }, { 16, 16 }, { 18, 30 }, { 130, 66 } };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int w = sizes[s][0], h = sizes[s][1], n = 6;
        uint8_t *f = moving_disc(n, w, h, 2);
        char what[32];
        snprintf(what, sizeof what, "%dx%d", w, h);
        exact(f, n, w, h, 24, NULL, what);
        free(f);
    }
}

Test(h264_decode, odd_size_refused_with_the_reason)
{
    struct h264enc *e = NULL;
    vr_err err = { 0 };
    struct h264enc_opts o = { .w = 51, .h = 34, .qp = 25 };
    cr_assert_eq(h264enc_new(&o, &e, &err), VR_EINVAL);
    cr_assert(strstr(err.msg, "51x34") && strstr(err.msg, "even"), "%s", err.msg);
    o.w = 50;
    o.qp = 52;
    cr_assert_eq(h264enc_new(&o, &e, &err), VR_EINVAL);
    cr_assert(strstr(err.msg, "QP 52"), "%s", err.msg);
    cr_assert_null(e);
}

/* h264enc_queue on the CPU (the worker's matte path calls it on every
 * backend): each call hands back its own frame's packet and tag, the same
 * bytes as h264enc_frame, and the flush has nothing left. */
Test(h264_decode, queued_on_the_cpu_gives_each_frames_packet_at_once)
{
    int w = 96, h = 64, n = 6;
    uint8_t *f = moving_disc(n, w, h, 5);
    struct h264enc *a = NULL, *b = NULL;
    vr_err err = { 0 };
    struct h264enc_opts o = { .w = w, .h = h, .qp = 25 };
    cr_assert_eq(h264enc_new(&o, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(h264enc_new(&o, &b, &err), 0, "%s", err.msg);
    for (int i = 0; i < n; i++) {
        const uint8_t *pa, *pb, *src = f + (size_t)i * w * h;
        int sa, sb, ka, kb;
        int64_t tag = -1;
        cr_assert_eq(h264enc_frame(a, src, w, i == 3, &pa, &sa, &ka, &err), 0, "%s", err.msg);
        cr_assert_eq(h264enc_queue(b, src, w, 0, i == 3, 70 + i, &pb, &sb, &kb, &tag, &err), 0,
                     "%s", err.msg);
        cr_assert_eq(tag, 70 + i);
        cr_assert(sb == sa && kb == ka && !memcmp(pa, pb, (size_t)sa), "frame %d differs", i);
    }
    const uint8_t *p;
    int size = -1, key;
    int64_t tag;
    cr_assert_eq(h264enc_flush(b, &p, &size, &key, &tag, &err), 0);
    cr_assert_eq(size, 0);
    cr_assert(h264enc_queue(b, f, w, 1, 0, 0, &p, &size, &key, &tag, &err) == VR_EINVAL,
              "a frame in device memory for an encoder on the CPU");
    h264enc_free(&a);
    h264enc_free(&b);
    free(f);
}

Test(h264_decode, back_to_back_idrs)
{
    int n = 4, w = 48, h = 32;
    uint8_t *f = moving_disc(n, w, h, 4);
    uint8_t idr[4] = { 1, 1, 1, 0 };
    struct th264_result r = exact(f, n, w, h, 30, idr, "IDR, IDR, IDR, P");
    cr_assert_eq(r.st.idr, 3);
    free(f);
}

Test(h264_decode, level_from_size_and_rate)
{
    cr_assert_eq(h264enc_level(4096, 2048, 60), 52);
    cr_assert_eq(h264enc_level(4096, 2048, 30), 51);
    cr_assert_eq(h264enc_level(1920, 1080, 30), 40);
    cr_assert_eq(h264enc_level(1920, 1080, 60), 42);
    cr_assert_eq(h264enc_level(320, 240, 30), 13);
    cr_assert_eq(h264enc_level(320, 240, 10), 11);
    cr_assert_eq(h264enc_level(4096, 4096, 60), 60);
    cr_assert_eq(h264enc_level(8192, 8192, 120), 62);
}

/* ---- the bundled clips' mattes ---- */

/* The matte of a bundled clip, made by `vr-worker process --cpu` with a
 * lossless matte (FFV1), read back; then through the round trip with an
 * IDR every 10 frames, at the balanced profile's QP (crf 23 + 2). */
static void clip_matte(const char *clip, int intra_p)
{
    struct th264_how how = { .intra_p = intra_p };
    char W[256], in[512], cfg[300], out[300];
    tv_tmpdir(W, sizeof W);
    tv_data(in, sizeof in, clip);
    snprintf(cfg, sizeof cfg, "%s/ffv1.json", W);
    snprintf(out, sizeof out, "%s/matte.mkv", W);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", cfg), 0);
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", "-c", cfg,
                           "--output", "mask", in, "-o", out, NULL };
    cr_assert_eq(tproc_run("vr-worker", argv, NULL, 0), 0, "process failed on %s", clip);
    struct tv_file m;
    cr_assert_eq(tv_read(out, 1, &m), 0);
    int n = m.nframes > 30 ? 30 : m.nframes;
    size_t fs = (size_t)m.w * m.h;
    uint8_t *f = malloc(n * fs), idr[30] = { 0 };
    cr_assert(f);
    for (int i = 0; i < n; i++) {
        memcpy(f + i * fs, m.luma[i], fs);
        idr[i] = i % 10 == 0;
    }
    struct th264_result r = exact_how(f, n, m.w, m.h, 25, idr, &how, clip);
    cr_assert(r.st.mb_p16 + r.st.mb_skip > 0 && r.st.mb_i16 > 0);
    cr_log_info("%s: %dx%d, %d frames, %lld bytes, PSNR %.2f dB, I16 %lld (in P %lld) P16 %lld "
                "skip %lld", clip, m.w, m.h, n, r.bytes, r.psnr, r.st.mb_i16,
                i16_in_p(&r, m.w, m.h), r.st.mb_p16, r.st.mb_skip);
    if (intra_p < 0)
        cr_assert_eq(i16_in_p(&r, m.w, m.h), 0, "%s: intra_p off, I16 MBs in P frames", clip);
    free(f);
    tv_free(&m);
    tv_rmdir(W);
}

Test(h264_decode, bundled_mono_clip_matte)
{
    clip_matte("tests/data/video/mono.mkv", -1);
}

Test(h264_decode, bundled_sbs_clip_matte)
{
    clip_matte("tests/data/video/sbs.mkv", -1);
}

Test(h264_decode, bundled_mono_clip_matte_intra_in_p)
{
    clip_matte("tests/data/video/mono.mkv", 1);
}

Test(h264_decode, bundled_sbs_clip_matte_intra_in_p)
{
    clip_matte("tests/data/video/sbs.mkv", 1);
}

/* ---- slices ---- */

/* The slice NAL units of packet p: their count into *n and each one's
 * first_mb_in_slice into first[] (at most max); NAL types other than 1
 * and 5 are skipped. */
static void slice_nals(const uint8_t *p, int size, int *n, unsigned *first, int max)
{
    *n = 0;
    for (int i = 0; i + 4 < size; i++) {
        if (p[i] || p[i + 1] || p[i + 2] != 1)
            continue;
        int type = p[i + 3] & 31;
        if (type != 1 && type != 5)
            continue;
        /* first_mb_in_slice, ue(v), from the byte after the NAL header (no
         * escape before it: the headers' first bytes hold no 00 00) */
        uint64_t v = 0;
        for (int k = 0; k < 8 && i + 4 + k < size; k++)
            v = v << 8 | p[i + 4 + k];
        int z = 0;
        while (z < 31 && !(v >> (63 - z) & 1))
            z++;
        unsigned ue = (unsigned)((v >> (63 - 2 * z)) & ((1ull << (z + 1)) - 1)) - 1;
        if (*n < max)
            first[*n] = ue;
        ++*n;
    }
}

/* Slices of whole MB rows (h264enc_opts slices): one NAL unit each,
 * beginning at MB (k * rows / S) * mbw, in every frame; the stream still
 * decodes to the reconstruction with libavcodec. 208x176 is 13x11 MBs:
 * 11 rows do not divide by 2, 3 or 4; S = 11 is a row a slice. With and
 * without Intra 16x16 in P frames, whose predictions stop at a slice's top. */
Test(h264_decode, slices_one_nal_each_and_decode_to_the_recon)
{
    const int w = 208, h = 176, n = 8, mbw = 13, rows = 11;
    const int ss[] = { 1, 2, 3, 4, 11 };
    uint8_t *f = random_discs(n, w, h, 5, 4242);
    uint8_t idr[8] = { [0] = 1, [5] = 1 };
    for (size_t si = 0; si < sizeof ss / sizeof ss[0]; si++)
        for (int ip = -1; ip <= 1; ip += 2) {
            int s = ss[si];
            char what[64];
            snprintf(what, sizeof what, "%d slices, intra in P %s", s, ip > 0 ? "on" : "off");
            struct th264_how how = { .intra_p = ip, .slices = s };
            struct th264_result r = exact_how(f, n, w, h, 22, idr, &how, what);
            cr_log_info("%s: %lld bytes, %.2f dB, P16 %lld, skip %lld, I16 in P %lld", what,
                        r.bytes, r.psnr, r.st.mb_p16, r.st.mb_skip, i16_in_p(&r, w, h));
            cr_assert(r.st.mb_p16 > 0 && r.st.mb_skip > 0, "%s: P16 %lld, skip %lld", what,
                      r.st.mb_p16, r.st.mb_skip);
            /* the NAL units, frame by frame */
            struct h264enc_opts o = { .w = w, .h = h, .qp = 22, .intra_p = ip, .slices = s };
            struct h264enc *e = NULL;
            vr_err err = { 0 };
            cr_assert_eq(h264enc_new(&o, &e, &err), 0, "%s: %s", what, err.msg);
            for (int i = 0; i < n; i++) {
                const uint8_t *pkt;
                int size, key, got;
                unsigned first[16];
                cr_assert_eq(h264enc_frame(e, f + (size_t)i * w * h, w, idr[i], &pkt, &size, &key,
                                           &err), 0, "%s: %s", what, err.msg);
                slice_nals(pkt, size, &got, first, 16);
                cr_assert_eq(got, s, "%s, frame %d: %d slice NAL units", what, i, got);
                for (int k = 0; k < s; k++)
                    cr_assert_eq(first[k], (unsigned)(k * rows / s * mbw),
                                 "%s, frame %d: slice %d begins at MB %u", what, i, k, first[k]);
            }
            h264enc_free(&e);
        }
    free(f);
}

/* Slices on the bundled-clip-like random masks of every size: the C twin's
 * stream decodes to its reconstruction for any S up to the MB rows. */
Test(h264_decode, random_masks_in_random_slices)
{
    for (unsigned seed = 1; seed <= 8; seed++) {
        srand(seed * 104729);
        int w = 16 + 2 * (rand() % 100), h = 16 + 2 * (rand() % 90), k = 1 + rand() % 6;
        int rows = (h + 15) / 16, s = 1 + rand() % rows, qp = 12 + rand() % 30;
        uint8_t *f = random_discs(6, w, h, k, seed);
        uint8_t idr[6] = { [0] = 1, [3] = (uint8_t)(seed & 1) };
        struct th264_how how = { .intra_p = seed & 2 ? 1 : -1, .slices = s };
        char what[80];
        snprintf(what, sizeof what, "seed %u: %dx%d in %d slices, QP %d", seed, w, h, s, qp);
        exact_how(f, 6, w, h, qp, idr, &how, what);
        free(f);
    }
}

Test(h264_decode, slices_outside_the_rows_refused)
{
    struct h264enc *e = NULL;
    vr_err err = { 0 };
    struct h264enc_opts o = { .w = 64, .h = 48, .qp = 25, .slices = 4 };
    cr_assert_eq(h264enc_new(&o, &e, &err), VR_EINVAL);
    cr_assert(strstr(err.msg, "slices"), "%s", err.msg);
    o.slices = -1;
    cr_assert_eq(h264enc_new(&o, &e, &err), VR_EINVAL);
    o.slices = 3;
    cr_assert_eq(h264enc_new(&o, &e, &err), 0, "%s", err.msg);
    h264enc_free(&e);
    cr_assert_eq(h264enc_slices_default(2048, 1), 4);
    cr_assert_eq(h264enc_slices_default(480, 1), 1);
    cr_assert_eq(h264enc_slices_default(2048, 0), 1); /* no P wavefront to shorten */
}
