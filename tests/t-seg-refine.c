/*
 * t-seg-refine.c - the guided refinement follows the picture's edges. On
 * the vtest frame (768x576, colour) with a coarse work mask (128 px long
 * side, so a 6x upsample), compared with a bilinear upsample of the same
 * mask: the output has the full input size, the mask is steeper where it
 * crosses 1/2 (mean gradient magnitude on that contour), those crossings
 * sit on stronger luma edges, and fewer pixels are left undecided.
 */
#include "util-seg.h"

#include <math.h>

#define VTEST "tests/data/image/vtest-100.jpg"

struct edge_stats {
    double undecided;  /* fraction of pixels with 32 < mask < 223 */
    double steepness;  /* mean |grad mask| on the mask's 128 contour */
    double on_edges;   /* mean |grad luma| on that contour */
    long n;            /* contour pixels */
};

/* Central-difference gradient magnitude of an 8-bit image at (x, y). */
static double gmag(const uint8_t *v, int w, int x, int y)
{
    double gx = (double)v[y * w + x + 1] - v[y * w + x - 1];
    double gy = (double)v[(y + 1) * w + x] - v[(y - 1) * w + x];
    return 0.5 * sqrt(gx * gx + gy * gy);
}

static struct edge_stats stats(const struct timg_mask *m, const uint8_t *luma)
{
    struct edge_stats s = { 0, 0, 0, 0 };
    long n_und = 0;
    for (int y = 1; y < m->h - 1; y++)
        for (int x = 1; x < m->w - 1; x++) {
            const uint8_t *v = m->v + y * m->w + x;
            n_und += *v > 32 && *v < 223;
            /* inside pixel with an outside 4-neighbour: on the contour */
            if (*v >= 128 && (v[-1] < 128 || v[1] < 128 || v[-m->w] < 128 || v[m->w] < 128)) {
                s.steepness += gmag(m->v, m->w, x, y);
                s.on_edges += gmag(luma, m->w, x, y);
                s.n++;
            }
        }
    s.undecided = (double)n_und / ((double)m->w * m->h);
    s.steepness /= s.n ? s.n : 1;
    s.on_edges /= s.n ? s.n : 1;
    return s;
}

Test(seg_refine, guided_is_sharper_than_bilinear_and_follows_edges, .timeout = 60)
{
    struct vr_config g = tseg_cfg("{\"work_size\": 128, \"refine\": \"guided\"}");
    struct vr_config b = tseg_cfg("{\"work_size\": 128, \"refine\": \"bilinear\"}");
    struct timg_mask mg = tseg_run(VTEST, &g, SEG_LAYOUT_MONO);
    struct timg_mask mb = tseg_run(VTEST, &b, SEG_LAYOUT_MONO);
    cr_assert(mg.w == 768 && mg.h == 576, "refined mask %dx%d", mg.w, mg.h);

    /* BT.709 luma of the photo, as the filter's guide sees it */
    struct vio_image *img = NULL;
    cr_assert_eq(vio_image_read(VTEST, &img, NULL), 0);
    uint8_t *luma = malloc((size_t)img->w * img->h);
    for (int y = 0; y < img->h; y++)
        for (int x = 0; x < img->w; x++) {
            const uint8_t *p = img->data + (size_t)y * img->linesize + 3 * x;
            luma[y * img->w + x] = (uint8_t)(0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2]);
        }

    struct edge_stats sg = stats(&mg, luma), sb = stats(&mb, luma);
    cr_log_info("guided: undecided %.4f steepness %.1f on-edges %.1f (%ld px); "
                "bilinear: %.4f %.1f %.1f (%ld px)", sg.undecided, sg.steepness,
                sg.on_edges, sg.n, sb.undecided, sb.steepness, sb.on_edges, sb.n);
    cr_assert_gt(sg.n, 100, "no person contour found");
    cr_assert_gt(sg.steepness, 2.0 * sb.steepness, "steepness %.1f vs bilinear %.1f",
                 sg.steepness, sb.steepness);
    cr_assert_gt(sg.on_edges, 1.1 * sb.on_edges, "luma gradient on the contour %.1f vs "
                 "bilinear %.1f", sg.on_edges, sb.on_edges);
    /* The guided filter copies some texture of flat regions into the mask,
     * and the whole pass's floor (frame_ref.h) adds low-resolution ramps
     * around large people; both must stay a small share of the frame. */
    cr_assert_lt(sg.undecided, 1.25 * sb.undecided + 0.005, "undecided %.4f vs bilinear %.4f",
                 sg.undecided, sb.undecided);
    free(luma);
    vio_image_free(&img);
    free(mg.v);
    free(mb.v);
}
