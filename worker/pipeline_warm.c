/*
 * pipeline_warm.c - the warm engine kept across runs (see pipeline_warm.h).
 * Options match when every seg_opts field and the config's canonical JSON
 * are equal: the JSON, not memcmp, so struct padding never decides.
 */
#include "pipeline_warm.h"

#include "log.h"

#include <string.h>

static int same_config(const struct vr_config *a, const struct vr_config *b)
{
    char ja[4096], jb[4096];
    int na = config_to_json(a, ja, sizeof ja), nb = config_to_json(b, jb, sizeof jb);
    return na > 0 && na == nb && !memcmp(ja, jb, (size_t)na);
}

static int same_opts(const struct seg_opts *a, const struct seg_opts *b)
{
    return a->backend == b->backend && a->gpu == b->gpu && a->layout == b->layout &&
           a->in_w == b->in_w && a->in_h == b->in_h && a->out_w == b->out_w &&
           a->out_h == b->out_h && a->max_batch == b->max_batch && same_config(a->cfg, b->cfg);
}

int pipe_warm_get(struct pipe_warm *w, const struct seg_opts *so, struct seg **seg, vr_err *err)
{
    if (w->seg && same_opts(&w->so, so)) {
        seg_reset(w->seg);
        w->reused++;
        *seg = w->seg;
        return 0;
    }
    pipe_warm_drop(w);
    w->cfg = *so->cfg;
    w->so = *so;
    w->so.cfg = &w->cfg; /* seg_create copies the config; keep ours for matching */
    int rc = seg_create(&w->so, &w->seg, err);
    if (rc < 0) {
        pipe_warm_drop(w);
        return rc;
    }
    w->built++;
    if (w->built > 1)
        log_info("engine rebuilt for a %dx%d %s input (profile %s)", so->in_w, so->in_h,
                 seg_layout_name(so->layout), so->cfg->profile);
    *seg = w->seg;
    return 0;
}

void pipe_warm_drop(struct pipe_warm *w)
{
    if (!w)
        return;
    seg_free(&w->seg);
}
