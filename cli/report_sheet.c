/*
 * report_sheet.c - the contact sheet of `vrctl report` (report_sheet.h):
 * frames 0, 10, 20, 30 of the job's source and of its output decoded side
 * by side, each row source | output (| overlay, for a matte) at the same
 * size, encoded as a PNG and written into the page as base64.
 */
#include "report_sheet.h"

#include "beneath.h"
#include "vio_image.h"
#include "vio_video.h"

#include <errno.h>
#include <fcntl.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens a path from Redis this command may decode: absolute, a regular
 * file, opened once (no wait on a FIFO, no link followed at its end, then
 * fstat), so nothing swapped in after a check can block or redirect the
 * decode; libav reads the descriptor as /proc/self/fd/N (beneath.h). The
 * descriptor in *fd (the caller closes it), its name for libav in fdp. */
static int sheet_open(const char *what, const char *p, int *fd, char *fdp, size_t n, vr_err *err)
{
    struct stat st;
    if (!p || p[0] != '/')
        return vr_err_set(err, VR_EINVAL, "the job's %s is not a local file", what);
    *fd = open(p, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0)
        return vr_err_set(err, errno == ENOENT ? VR_ENOENT : VR_EINVAL, "the job's %s %s",
                          what, errno == ENOENT ? "is not there" : "cannot be opened");
    if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode))
        return vr_err_set(err, VR_EINVAL, "the job's %s is not a regular file", what);
    int fl = fcntl(*fd, F_GETFL);
    if (fl < 0 || fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
        return vr_err_set(err, VR_EIO, "the job's %s cannot be read", what);
    beneath_fd_path(*fd, NULL, fdp, n);
    return 0;
}

/* The next decoded video frame of `in` into f (unreferenced first): 1, 0
 * at the end, <0 on error. */
static int sheet_next(struct vio_in *in, AVFrame *f, AVPacket *pkt, vr_err *err)
{
    av_frame_unref(f);
    for (;;) {
        int ev = vio_in_next(in, f, pkt, err);
        if (ev < 0)
            return ev;
        if (ev == VIO_EOF)
            return 0;
        if (ev == VIO_FRAME)
            return 1;
        av_packet_unref(pkt);
        av_frame_unref(f);
    }
}

/* Frame f scaled into the cell at (x0, y0), cw x ch, of img. */
static int sheet_cell(struct vio_image *img, const AVFrame *f, int x0, int y0, int cw, int ch,
                      vr_err *err)
{
    struct SwsContext *sws = sws_getContext(f->width, f->height, f->format, cw, ch,
                                            AV_PIX_FMT_RGB24, SWS_AREA, NULL, NULL, NULL);
    if (!sws)
        return vr_err_set(err, VR_ECODEC, "cannot scale a %dx%d frame", f->width, f->height);
    uint8_t *dst[4] = { img->data + (size_t)y0 * img->linesize + 3 * (size_t)x0 };
    int ls[4] = { img->linesize };
    sws_scale(sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, dst, ls);
    sws_freeContext(sws);
    return 0;
}

/* The overlay cell at (2 cw, y0) from the row's source and matte cells
 * (the matte's gray read from its red channel). */
static void sheet_overlay(struct vio_image *img, int y0, int cw, int ch)
{
    for (int y = y0; y < y0 + ch; y++) {
        uint8_t *row = img->data + (size_t)y * img->linesize;
        for (int x = 0; x < cw; x++)
            vio_overlay_px(row + 3 * (2 * cw + x), row + 3 * x, row[3 * (cw + x)]);
    }
}

/* The sheet: rows of source | output (| overlay when `matte`) for frames
 * 0, STEP, 2 STEP, ... while both files have them. *rows gets how many
 * were drawn. */
static int sheet_draw(struct vio_in *a, struct vio_in *b, int matte, struct vio_image **img,
                      int *rows, vr_err *err)
{
    const struct vio_info *ia = vio_in_info(a);
    int cw = ia->w < REPORT_SHEET_CELL ? ia->w : REPORT_SHEET_CELL;
    int ch = (int)((long long)ia->h * cw / ia->w);
    cw &= ~1;
    ch = ch < 2 ? 2 : ch & ~1;
    AVFrame *fa = av_frame_alloc(), *fb = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    int rc = !fa || !fb || !pkt ? vr_err_set(err, VR_ENOMEM, "out of memory") : 0;
    if (!rc)
        rc = vio_image_alloc((matte ? 3 : 2) * cw, REPORT_SHEET_ROWS * ch, img, err);
    if (!rc)
        memset((*img)->data, 0, (size_t)(*img)->linesize * (*img)->h);
    *rows = 0;
    for (int i = 0; !rc && *rows < REPORT_SHEET_ROWS; i++) {
        int ga = sheet_next(a, fa, pkt, err), gb = ga > 0 ? sheet_next(b, fb, pkt, err) : 0;
        if (ga < 0 || gb < 0)
            rc = ga < 0 ? ga : gb;
        else if (ga == 0 || gb == 0)
            break;
        else if (i % REPORT_SHEET_STEP == 0) {
            rc = sheet_cell(*img, fa, 0, *rows * ch, cw, ch, err);
            if (!rc)
                rc = sheet_cell(*img, fb, cw, *rows * ch, cw, ch, err);
            if (!rc && matte)
                sheet_overlay(*img, *rows * ch, cw, ch);
            ++*rows;
        }
    }
    av_frame_free(&fa);
    av_frame_free(&fb);
    av_packet_free(&pkt);
    if (!rc && *rows == 0)
        rc = vr_err_set(err, VR_EFORMAT, "the job's files hold no frame");
    if (!rc)
        (*img)->h = *rows * ch;
    return rc;
}

/* The PNG's bytes (caller frees): encoded through a private temporary
 * directory, as vio_image writes files. */
static int sheet_png(const struct vio_image *img, unsigned char **png, size_t *len, vr_err *err)
{
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/vrctl-sheet-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return vr_err_set(err, VR_EIO, "cannot make a temporary directory in %s",
                          tmp ? tmp : "/tmp");
    snprintf(path, sizeof path, "%s/sheet.png", dir);
    int rc = vio_image_write_rgb_png(path, img, err);
    FILE *f = rc ? NULL : fopen(path, "rb");
    if (!rc && !f)
        rc = vr_err_set(err, VR_EIO, "cannot read the sheet back");
    if (f) {
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        rewind(f);
        *png = n > 0 ? malloc((size_t)n) : NULL;
        if (!*png || fread(*png, 1, (size_t)n, f) != (size_t)n) {
            free(*png);
            *png = NULL;
            rc = vr_err_set(err, VR_EIO, "cannot read the sheet back");
        } else {
            *len = (size_t)n;
        }
        fclose(f);
    }
    unlink(path);
    rmdir(dir);
    return rc;
}

static void base64_put(FILE *f, const unsigned char *p, size_t n)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        fputc(A[v >> 18 & 63], f);
        fputc(A[v >> 12 & 63], f);
        fputc(i + 1 < n ? A[v >> 6 & 63] : '=', f);
        fputc(i + 2 < n ? A[v & 63] : '=', f);
    }
}

int report_sheet_html(FILE *f, const char *src, const char *out, int matte, vr_err *err)
{
    int fa = -1, fb = -1;
    char pa[BENEATH_FD_PATH_MAX], pb[BENEATH_FD_PATH_MAX];
    if (sheet_open("input", src, &fa, pa, sizeof pa, err) < 0 ||
        sheet_open("output", out, &fb, pb, sizeof pb, err) < 0) {
        if (fa >= 0)
            close(fa);
        if (fb >= 0)
            close(fb);
        return err->code;
    }
    struct vio_in_opts oa = { .path = pa }, ob = { .path = pb };
    struct vio_in *a = NULL, *b = NULL;
    struct vio_image *img = NULL;
    unsigned char *png = NULL;
    size_t len = 0;
    int rows = 0;
    int rc = vio_in_open(&oa, &a, err);
    if (!rc)
        rc = vio_in_open(&ob, &b, err);
    if (rc) {
        beneath_unmask(err, fa, src);
        beneath_unmask(err, fb, out);
    }
    if (!rc)
        rc = sheet_draw(a, b, matte, &img, &rows, err);
    if (!rc)
        rc = sheet_png(img, &png, &len, err);
    if (!rc) {
        fprintf(f, "<img class=\"sheet\" width=\"%d\" height=\"%d\" alt=\"frames 0 to %d: "
                   "%s\" src=\"data:image/png;base64,",
                img->w, img->h, (rows - 1) * REPORT_SHEET_STEP,
                matte ? "source, matte and overlay" : "source and output");
        base64_put(f, png, len);
        fputs("\">\n", f);
    }
    free(png);
    vio_image_free(&img);
    vio_in_free(&b);
    vio_in_free(&a);
    close(fb);
    close(fa);
    return rc;
}
