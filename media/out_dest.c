/*
 * out_dest.c - an output (-o) to a file or a WebDAV URL (out_dest.h).
 */
#include "out_dest.h"

#include "http_put.h"
#include "url_root.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int out_dest_begin(struct out_dest *d, const char *out, int replace, vr_err *err)
{
    memset(d, 0, sizeof *d);
    d->out = out;
    d->url = url_root_is_url(out);
    if (!d->url) {
        snprintf(d->local, sizeof d->local, "%s", out);
        return 0;
    }
    /* the local file keeps the object's name: the muxer picks the format
     * from its extension */
    const char *path = strchr(strstr(out, "://") + 3, '/');
    const char *base = path ? strrchr(path, '/') + 1 : "";
    size_t bl = strcspn(base, "?#");
    if (!bl || bl > 200 || memchr(base, '%', bl))
        return vr_err_set(err, VR_EINVAL, "-o %s: the URL must end in a plain file name "
                          "(clip.mkv)", out);
    int rc = replace ? 0 : http_exists(out, err);
    if (rc == 1)
        return vr_err_set(err, VR_EINVAL, "-o %s exists (-y replaces it)", out);
    if (rc < 0)
        return rc;
    const char *tmp = getenv("TMPDIR");
    snprintf(d->dir, sizeof d->dir, "%s/vrseg-out-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(d->dir)) {
        d->dir[0] = '\0';
        return vr_err_set(err, VR_EIO, "cannot make a directory under %s for -o %s's local copy",
                          tmp && *tmp ? tmp : "/tmp", out);
    }
    snprintf(d->local, sizeof d->local, "%s/%.*s", d->dir, (int)bl, base);
    return 0;
}

int out_dest_commit(struct out_dest *d, int replace, vr_err *err)
{
    if (!d->url)
        return 0;
    int rc = http_put_file(d->out, d->local, replace, err);
    out_dest_end(d);
    return rc;
}

void out_dest_end(struct out_dest *d)
{
    if (!d->url || !d->dir[0])
        return;
    unlink(d->local);
    rmdir(d->dir);
    d->dir[0] = '\0';
}
