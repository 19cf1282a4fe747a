/*
 * pipeline_warm.c - the warm engine kept across runs (see pipeline_warm.h).
 * Options match when every seg_opts field and the config's canonical JSON
 * are equal: the JSON, not memcmp, so struct padding never decides.
 */
#include "pipeline_warm.h"

#include "log.h"
#include "vio_video.h"

#include <string.h>
#include <sys/stat.h>

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
    vio_in_free(&w->in);
}

void pipe_warm_release(struct pipe_warm *w, const char *who)
{
    if (!w)
        return;
    if (w->in) {
        const struct vio_info *inf = vio_in_info(w->in);
        log_info("worker %s: kept decoder released (%s %dx%d%s)", who, inf->codec, inf->w, inf->h,
                 inf->hw ? ", NVDEC" : "");
    }
    pipe_warm_drop(w);
}

void pipe_warm_idle(struct pipe_warm *w)
{
    if (!w || !w->in)
        return;
    vio_in_close_file(w->in);
    w->in_id = (struct pipe_file_id){ 0 };
}

static int file_id(const char *path, struct pipe_file_id *id)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return -1;
    *id = (struct pipe_file_id){ .dev = st.st_dev, .ino = st.st_ino, .size = st.st_size,
                                 .mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL +
                                             st.st_mtim.tv_nsec };
    return 0;
}

static int same_file(const struct pipe_file_id *a, const struct pipe_file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns;
}

int pipe_warm_open_input(struct pipe_warm *w, const struct vio_in_opts *o, struct vio_in **in,
                         vr_err *err)
{
    struct pipe_file_id id;
    if (w && w->in && o->range && file_id(o->path, &id) == 0 && same_file(&id, &w->in_id)) {
        vr_err e = { 0 };
        int rc = vio_in_retarget(w->in, o, &e);
        if (rc == 0) {
            *in = w->in;
            w->in = NULL;
            w->dec_kept++;
            return 1;
        }
        if (rc != VR_EINVAL) /* not only other decoding options: say why */
            log_info("%s: the kept input cannot read this range (%s); opening it again", o->path,
                     e.msg);
    }
    /* another file: its decoder still serves when the stream is alike */
    int kept = 0, warmed = w && w->in_warmed;
    int rc = vio_in_open_from(o, w ? &w->in : NULL, in, &kept, err);
    if (w) {
        vio_in_free(&w->in); /* a decoder the stream did not fit: released here */
        if (rc == 0 && kept)
            w->dec_kept++;
        else if (rc == 0)
            w->dec_new++;
        w->in_warmed = 0;
    }
    return rc < 0 ? rc : kept ? (warmed ? 3 : 2) : 0;
}

void pipe_warm_keep_input(struct pipe_warm *w, const char *path, struct vio_in **in)
{
    if (!w || !*in || file_id(path, &w->in_id) < 0) {
        vio_in_free(in);
        return;
    }
    vio_in_free(&w->in);
    w->in = *in;
    w->in_warmed = 0;
    *in = NULL;
}

void pipe_warm_keep_warmed(struct pipe_warm *w, struct vio_in **in)
{
    vio_in_free(&w->in);
    vio_in_close_file(*in);
    w->in = *in;
    w->in_id = (struct pipe_file_id){ 0 };
    w->in_warmed = 1;
    *in = NULL;
}
