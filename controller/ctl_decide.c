/*
 * ctl_decide.c - what every chunk of a job is processed with, decided once
 * by the controller from the whole source and the spec: the layout (the
 * source's stereo metadata, its file name, its aspect: a chunk file has no
 * name of its own and not always the metadata), and the config (profile
 * plus the job's overrides), from which the split learns how many frames
 * each chunk must warm the temporal filter up with. So the fleet's answer
 * is the answer of one `vr-worker process` run (docs/notes/temporal.md).
 */
#include "ctl.h"

#include "config.h"
#include "log.h"
#include "remux_ts.h"
#include "vio_layout.h"

#include <stdio.h>
#include <string.h>

int ctl_decide(const struct job_spec *js, const char *in, const struct ctl_probe *p,
               struct ctl_decision *d, vr_err *err)
{
    memset(d, 0, sizeof *d);
    struct vr_config cfg;
    int rc = config_load_profile(&cfg, js->profile, err);
    if (rc == 0 && js->config[0])
        rc = config_apply_text(&cfg, js->config, "the job's config", err);
    if (rc < 0)
        return rc;
    d->warmup = config_history_frames(&cfg);
    if (p->rc < 0) {
        if (err)
            *err = p->err;
        return p->rc;
    }
    /* what the stitch would refuse, refused before any work */
    if ((rc = remux_ts_streams_check(js->input, p->info.streams, err)) < 0)
        return rc;
    d->duration_s = p->info.duration_s > 0 ? p->info.duration_s : 0;
    int given = vio_layout_parse(js->layout);
    if (given >= 0) {
        snprintf(d->layout, sizeof d->layout, "%s", vio_layout_name(given));
        d->why = "given with the job";
        return 0;
    }
    struct vio_in_opts io = { .path = in };
    struct vio_in *src = NULL;
    if ((rc = vio_in_open(&io, &src, err)) < 0)
        return rc;
    enum vio_layout l = vio_guess_layout(vio_in_info(src), js->input, &d->why);
    vio_in_free(&src);
    snprintf(d->layout, sizeof d->layout, "%s", vio_layout_name(l));
    return 0;
}
