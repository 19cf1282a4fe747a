/*
 * serve_url.c - a chunk's output by HTTP (vr-worker serve --storage URL):
 * a worker that mounts no shared storage writes the chunk into a staging
 * directory of its own under $TMPDIR, sums it there (the sum its commit
 * carries and the stitch checks), then puts the sidecar and the output
 * under the URL prefix at the chunk's own relative name
 * (<URL>jobs/<job>/out/<name>), each by PUT to a temporary name and one
 * MOVE (http_put.h: the retries, the address rule, messages naming the
 * object and the HTTP status). The commit comes only after both are in
 * place, so the controller never reads a chunk's name half written; a
 * PUT cut short is retried and never moved.
 */
#include "serve.h"

#include "http_put.h"
#include "remux_ts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int serve_url_stage(char *dir, size_t n, vr_err *err)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, n, "%s/vrseg-chunk-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return storage_errno(errno, "cannot create the chunk's staging directory", dir, err);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int rc = storage_errno(errno, "cannot open the chunk's staging directory", dir, err);
        rmdir(dir);
        return rc;
    }
    return fd;
}

int serve_url_put(const struct serve *s, const char *rel, const char *out_path,
                  const char *ts_path, vr_err *err)
{
    char url[URL_ROOT_MAX + 512], ts_url[URL_ROOT_MAX + 520];
    /* rel is jobs/<job>/out/<one name>, checked against the task's job */
    if (snprintf(url, sizeof url, "%s%s", s->storage_url, rel) >= (int)sizeof url ||
        remux_ts_name(url, ts_url, sizeof ts_url, err) < 0)
        return vr_err_set(err, VR_EINVAL, "%s: chunk output URL too long", rel);
    /* the sidecar first: the output's name is the last to appear */
    int rc = ts_path ? http_put_file(ts_url, ts_path, 1, err) : 0;
    return rc < 0 ? rc : http_put_file(url, out_path, 1, err);
}
