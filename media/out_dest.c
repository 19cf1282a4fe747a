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

int out_dest_url_check(const char *out, int replace, char *base, size_t n, vr_err *err)
{
    const char *path = strchr(strstr(out, "://") + 3, '/');
    const char *b = path ? strrchr(path, '/') + 1 : "";
    size_t bl = strcspn(b, "?#");
    if (!bl || bl >= n || bl >= OUT_DEST_NAME_MAX || memchr(b, '%', bl))
        return vr_err_set(err, VR_EINVAL, "-o %s: the URL must end in a plain file name "
                          "(clip.mkv)", out);
    snprintf(base, n, "%.*s", (int)bl, b);
    int rc = replace ? 0 : http_exists(out, err);
    if (rc == 1)
        return vr_err_set(err, VR_EINVAL, "-o %s exists (-y replaces it)", out);
    return rc < 0 ? rc : 0;
}

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
    char base[OUT_DEST_NAME_MAX];
    int rc = out_dest_url_check(out, replace, base, sizeof base, err);
    if (rc < 0)
        return rc;
    const char *tmp = getenv("TMPDIR");
    snprintf(d->dir, sizeof d->dir, "%s/vrseg-out-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(d->dir)) {
        d->dir[0] = '\0';
        return vr_err_set(err, VR_EIO, "cannot make a directory under %s for -o %s's local copy",
                          tmp && *tmp ? tmp : "/tmp", out);
    }
    snprintf(d->local, sizeof d->local, "%s/%s", d->dir, base);
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
