/*
 * output_kinds.c - sizes for each output kind and the dispatch to its
 * compose function (see output_kinds.h).
 */
#include "output_kinds.h"

#include <string.h>

static const char *const kind_names[] = { "mask", "alpha-packed", "greenscreen" };

int output_kind_parse(const char *s)
{
    if (s && !strcmp(s, "alpha")) /* vrctl's short name */
        return PIPE_OUT_ALPHA_PACKED;
    for (int i = 0; s && i < 3; i++)
        if (!strcmp(s, kind_names[i]))
            return i;
    return -1;
}

const char *output_kind_name(enum pipe_output k)
{
    return (unsigned)k < 3 ? kind_names[k] : "?";
}

static int even(double v)
{
    int i = (int)(v + 0.5);
    i &= ~1;
    return i < 2 ? 2 : i;
}

int output_plan_make(enum pipe_output kind, enum seg_layout layout, int in_w, int in_h,
                     const struct vr_config *cfg, struct output_plan *p, vr_err *err)
{
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->layout = layout;
    p->in_w = in_w;
    p->in_h = in_h;
    if (in_w < 16 || in_h < 16)
        return vr_err_set(err, VR_EINVAL, "frame %dx%d too small to segment (16x16 at least)", in_w, in_h);
    switch (kind) {
    case PIPE_OUT_MASK:
        p->mask_w = p->enc_w = even(in_w * cfg->output_scale);
        p->mask_h = p->enc_h = even(in_h * cfg->output_scale);
        p->full_range = 1;
        return 0;
    case PIPE_OUT_ALPHA_PACKED: {
        /* whole-frame matte at 40 % of every eye: eyes tile the frame, so
         * 40 % of the frame, rounded so each eye's share splits in halves */
        int ex = layout == SEG_LAYOUT_SBS ? 2 : 1, ey = layout == SEG_LAYOUT_TB ? 2 : 1;
        p->mask_w = even(in_w / ex * OUTPUT_ALPHA_SCALE) * ex;
        p->mask_h = even(in_h / ey * OUTPUT_ALPHA_SCALE) * ey;
        p->enc_w = in_w & ~1;
        p->enc_h = in_h & ~1;
        p->needs_colour = 1;
        return 0;
    }
    case PIPE_OUT_GREENSCREEN:
        p->mask_w = p->enc_w = in_w & ~1;
        p->mask_h = p->enc_h = in_h & ~1;
        p->needs_colour = 1;
        return 0;
    }
    return vr_err_set(err, VR_EINVAL, "unknown output kind %d", (int)kind);
}

void output_compose(const struct output_plan *p, const AVFrame *src, const uint8_t *mask,
                    int mask_ls, AVFrame *dst)
{
    switch (p->kind) {
    case PIPE_OUT_MASK:        output_mask_compose(p, mask, mask_ls, dst); break;
    case PIPE_OUT_ALPHA_PACKED: output_alpha_compose(p, src, mask, mask_ls, dst); break;
    case PIPE_OUT_GREENSCREEN: output_greenscreen_compose(p, src, mask, mask_ls, dst); break;
    }
}
