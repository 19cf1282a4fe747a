/*
 * t-media-image-read.c - vio_image: PNG and JPEG decode to the same RGB bytes the
 * ffmpeg CLI gives; a written mask PNG reads back exactly; missing, empty,
 * truncated, corrupt and non-image files are errors naming the file.
 */
#include "util-image.h"

#include <libavutil/log.h>

#include <stdint.h>

#define ASTRO "tests/data/image/astronaut-256.png"
#define BBALL "tests/data/image/basketball-256.jpg"

/* Max abs difference between our decode and `ffmpeg -pix_fmt rgb24`. */
static int max_diff_vs_ffmpeg(const char *path)
{
    char dir[64], raw[128];
    timg_tmpdir(dir, sizeof dir);
    snprintf(raw, sizeof raw, "%s/x.rgb", dir);
    cr_assert_eq(tsh("ffmpeg -v error -y -i %s -f rawvideo -pix_fmt rgb24 %s", path, raw), 0);
    struct vio_image *img = NULL;
    vr_err e = { 0 };
    cr_assert_eq(vio_image_read(path, &img, &e), 0, "%s", e.msg);
    FILE *f = fopen(raw, "rb");
    cr_assert_not_null(f);
    int md = 0;
    for (int y = 0; y < img->h; y++)
        for (int x = 0; x < 3 * img->w; x++) {
            int c = fgetc(f);
            cr_assert_neq(c, EOF, "ffmpeg gave fewer pixels");
            int d = abs(c - img->data[(size_t)y * img->linesize + x]);
            md = d > md ? d : md;
        }
    fclose(f);
    vio_image_free(&img);
    tsh("rm -rf %s", dir);
    return md;
}

Test(media_image_read, png_matches_ffmpeg)
{
    cr_assert_eq(max_diff_vs_ffmpeg(ASTRO), 0);
}

Test(media_image_read, gray_jpeg_matches_ffmpeg)
{
    struct vio_image *img = NULL;
    cr_assert_eq(vio_image_read(BBALL, &img, NULL), 0);
    cr_assert_eq(img->w, 256);
    cr_assert_eq(img->h, 256);
    vio_image_free(&img);
    cr_assert_leq(max_diff_vs_ffmpeg(BBALL), 1);
}

Test(media_image_read, colour_jpeg_close_to_ffmpeg)
{
    /* 4:2:0 chroma: allow swscale's chroma upsampling a step of rounding */
    int d = max_diff_vs_ffmpeg("tests/data/image/vtest-100.jpg");
    cr_assert_leq(d, 2, "max diff %d", d);
}

Test(media_image_read, gray_png_round_trip)
{
    char dir[64], out[128];
    timg_tmpdir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/m.png", dir);
    uint8_t px[7 * 5];
    for (int i = 0; i < 35; i++)
        px[i] = (uint8_t)(i * 7);
    vr_err e = { 0 };
    cr_assert_eq(vio_image_write_gray_png(out, px, 7, 5, 7, &e), 0, "%s", e.msg);
    cr_assert_eq(access(out, F_OK), 0);
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    cr_assert_neq(access(tmp, F_OK), 0, "temporary name left behind");
    cr_assert_eq(tsh("ffprobe -v error -show_entries stream=codec_name,pix_fmt "
                         "-of csv=p=0 %s | grep -q 'png,gray'", out), 0,
                 "not an 8-bit gray PNG");
    struct timg_mask m = timg_read_mask(out);
    cr_assert_eq(m.w, 7);
    cr_assert_eq(m.h, 5);
    for (int i = 0; i < 35; i++)
        cr_assert_eq(m.v[i], px[i]);
    free(m.v);
    tsh("rm -rf %s", dir);
}

/* ---- bad inputs ---- */

static void expect_error(const char *path, int code, const char *words)
{
    struct vio_image *img = NULL;
    vr_err e = { 0 };
    cr_assert_eq(vio_image_read(path, &img, &e), code, "%s: %s", path, e.msg);
    cr_assert_null(img);
    cr_assert(strstr(e.msg, path), "message does not name the file: %s", e.msg);
    cr_assert(strstr(e.msg, words), "expected '%s' in: %s", words, e.msg);
}

Test(media_image_read, bad_inputs_are_clear_errors)
{
    char dir[64], p[160];
    timg_tmpdir(dir, sizeof dir);
    av_log_set_level(AV_LOG_FATAL); /* the decoder's own complaint is expected */

    snprintf(p, sizeof p, "%s/missing.png", dir);
    expect_error(p, VR_ENOENT, "no such file");

    snprintf(p, sizeof p, "%s/empty.png", dir);
    tsh("touch %s", p);
    expect_error(p, VR_EFORMAT, "empty");

    snprintf(p, sizeof p, "%s/notes.png", dir);
    tsh("echo 'this is text, not a picture' > %s", p);
    expect_error(p, VR_EFORMAT, "not a PNG or JPEG");

    snprintf(p, sizeof p, "%s/half.png", dir);
    tsh("head -c 60000 %s > %s", ASTRO, p);
    expect_error(p, VR_EFORMAT, "truncated");

    snprintf(p, sizeof p, "%s/half.jpg", dir);
    tsh("head -c 3000 %s > %s", BBALL, p);
    expect_error(p, VR_EFORMAT, "truncated");

    /* flipped bytes inside the PNG's image data: its CRC no longer matches */
    snprintf(p, sizeof p, "%s/corrupt.png", dir);
    tsh("cp %s %s && printf '\\377\\000\\377\\000' | "
            "dd of=%s bs=1 seek=50000 conv=notrunc status=none", ASTRO, p, p);
    expect_error(p, VR_EFORMAT, "corrupt");

    /* a directory is not an image either */
    expect_error(dir, VR_EFORMAT, "not a regular file");
    tsh("rm -rf %s", dir);
}
