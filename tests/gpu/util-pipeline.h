/*
 * util-pipeline.h - helpers of the whole-pipeline GPU tests
 * (tests/gpu/g-worker-pipeline-*.c): the options of a mask output on GPU 0
 * (NVDEC, SEG_CUDA), the layout guessed, a profile with a config text
 * over it. Header-only (static functions) so each test file stands alone.
 */
#ifndef VR_G_PIPELINE_UTIL_H
#define VR_G_PIPELINE_UTIL_H

#include "config.h"
#include "pipeline.h"

#include <criterion/criterion.h>
#include <string.h>

static inline void gp_mask_opts(struct pipe_opts *o, const char *profile, const char *json)
{
    vr_err e = { 0 };
    memset(o, 0, sizeof *o);
    o->backend = SEG_CUDA;
    o->gpu = 0;
    o->layout = -1;
    o->output = PIPE_OUT_MASK;
    cr_assert_eq(config_load_profile(&o->cfg, profile, &e), 0, "%s", e.msg);
    cr_assert_eq(config_apply_text(&o->cfg, json, "test", &e), 0, "%s", e.msg);
}

#endif
