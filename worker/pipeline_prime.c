/*
 * pipeline_prime.c - a serve worker's warm-up before its first chunk
 * (pipeline.h, pipeline_warm_up; issue 43): the decoder, the engine and the
 * encoder's NVENC probe made while no chunk waits on them, so the fleet's
 * first job starts at the speed of the next ones.
 *
 * The decoder needs a real stream: libavcodec creates the NVDEC decoder at
 * the first picture's parameter sets, not at open, and the kept decoder
 * only serves a stream with the same parameter sets (vio_in_open_from).
 * So a warm-up decodes the first frame of a source of the expected format
 * (the last job's on this host, or one named with --warm-from).
 */
#include "pipeline.h"

#include "clock.h"
#include "log.h"
#include "output_kinds.h"
#include "pipeline_cuda.h"
#include "vio_layout.h"
#include "vio_video.h"

#include <libavutil/pixdesc.h>
#include <stdio.h>
#include <string.h>

void pipeline_format(const struct vio_in *in, char *buf, size_t n)
{
    const struct vio_info *inf = vio_in_info(in);
    const char *pf = av_get_pix_fmt_name(inf->coded_fmt);
    snprintf(buf, n, "%s:%dx%d:%s", inf->codec ? inf->codec : "none", inf->w, inf->h,
             pf ? pf : "none");
}

/* Decodes until the first frame: the decoder (NVDEC's included) exists. */
static int first_frame(struct vio_in *in, vr_err *err)
{
    AVFrame *f = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    int rc = f && pkt ? VIO_PACKET : vr_err_set(err, VR_ENOMEM, "out of memory");
    while (rc == VIO_PACKET) {
        rc = vio_in_next(in, f, pkt, err);
        av_packet_unref(pkt);
        av_frame_unref(f);
    }
    av_frame_free(&f);
    av_packet_free(&pkt);
    if (rc == VIO_EOF)
        return vr_err_set(err, VR_EFORMAT, "no video frame to decode");
    return rc < 0 ? rc : 0;
}

/* The engine a mask run of this stream asks for (open_all's seg_opts). */
static int warm_engine(const struct pipe_opts *o, const struct vio_in *in, const char *name,
                       vr_err *err)
{
    const struct vio_info *inf = vio_in_info(in);
    const char *why = "--layout";
    enum seg_layout layout = o->layout >= 0 ? (enum seg_layout)o->layout
                                            : (enum seg_layout)vio_guess_layout(inf, name, &why);
    struct output_plan plan;
    int rc = output_plan_make(PIPE_OUT_MASK, layout, inf->w, inf->h, &o->cfg, &plan, err);
    if (rc < 0)
        return rc;
    struct seg_opts so = { .backend = o->backend, .gpu = o->gpu, .cfg = &o->cfg,
                           .layout = layout, .in_w = inf->w, .in_h = inf->h,
                           .out_w = plan.mask_w, .out_h = plan.mask_h,
                           .max_batch = pipeline_batch(o) };
    struct seg *seg;
    return pipe_warm_get(o->warm, &so, &seg, err);
}

int pipeline_warm_up(const struct pipe_opts *o, const char *in, const char *name,
                     const char *want, char *fmt, size_t nf, double took_ms[3], vr_err *err)
{
    int gpu = o->backend == SEG_CUDA;
    double part[3] = { 0, 0, 0 }, t = clock_mono_ms();
    struct vio_in_opts io;
    pipeline_input_opts(o, in, &io);
    struct vio_in *vin = NULL;
    int rc = gpu ? pcuda_check(o->gpu, err) : 0;
    if (rc == 0)
        rc = vio_in_open(&io, &vin, err);
    if (rc == VR_ENOTSUP && gpu) { /* as a run does: 8K H.264 decodes on the CPU */
        io.hw = 0;
        rc = vio_in_open(&io, &vin, err);
    }
    if (rc < 0)
        return rc;
    pipeline_format(vin, fmt, nf);
    if (want && strcmp(want, fmt)) {
        vio_in_free(&vin);
        vr_err_set(err, 0, "its format is now %s, not %s", fmt, want);
        return 0;
    }
    rc = first_frame(vin, err);
    part[0] = clock_mono_ms() - t;
    t = clock_mono_ms();
    char pci[32];
    if (rc == 0 && gpu)
        rc = pcuda_init(o->gpu, pci, sizeof pci, err); /* the runtime joins NVDEC's context */
    if (rc == 0)
        rc = warm_engine(o, vin, name, err);
    part[1] = clock_mono_ms() - t;
    t = clock_mono_ms();
    if (rc == 0) {
        pipe_warm_keep_warmed(o->warm, &vin);
        if (gpu)
            pipeline_nvenc_probe(o->gpu);
    }
    part[2] = clock_mono_ms() - t;
    if (took_ms)
        memcpy(took_ms, part, sizeof part);
    vio_in_free(&vin);
    if (rc < 0) {
        pipe_warm_drop(o->warm); /* as a failed run: nothing half made is kept */
        return rc;
    }
    return 1;
}
