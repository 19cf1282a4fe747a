/*
 * ctl_chunk_url.c - chunk outputs by URL (vr-controller --storage URL):
 * the workers put each chunk's output and sidecar under the URL prefix
 * at the chunk's own relative name (<URL>jobs/<id>/out/<name>, worker/
 * serve_url.c), and the stitch reads them back from there.
 *
 * A chunk is ready when both objects answer (HEAD). Before the stitch adds
 * it, both are read by range GETs (http_io.h: retried, a short response
 * never used, the object's identity pinned for the read) into the job's
 * out/ beneath the storage root, through a temporary name, after their
 * sizes passed the bound of their frames: from there the stitch checks
 * them against the commit's sum and copies them as it does a chunk a
 * worker wrote on shared storage, so a chunk cut short or changed on the
 * store is computed again, never stitched. The objects go once the job
 * has ended (ctl_chunk_gc.c, off the loop): one DELETE of the job's
 * collection, or of each object where the store deletes no collection.
 */
#include "ctl.h"

#include "beneath.h"
#include "clock.h"
#include "http_io.h"
#include "http_put.h"
#include "log.h"
#include "remux.h"
#include "remux_ts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CTL_CHUNK_URL_BLOCK (4 << 20) /* one range GET */

/* Chunk i's output (or its sidecar) relative to the storage root and by
 * URL; 0, or VR_EINVAL when a name is too long. */
static int ctl_chunk_url(struct ctl *c, const char *id, int i, int sidecar, char *rel,
                         size_t nrel, char *url, size_t nurl, vr_err *err)
{
    char dir[128], out[320];
    snprintf(dir, sizeof dir, "jobs/%.*s/out", JOB_ID_MAX, id); /* = ctl_chunk_rel's */
    if (remux_chunk_name(dir, i, out, sizeof out, NULL) < 0 || (sidecar ? remux_ts_name(out, rel, nrel, err) < 0
                            : snprintf(rel, nrel, "%s", out) >= (int)nrel) ||
        snprintf(url, nurl, "%s%s", c->storage_url, rel) >= (int)nurl)
        return vr_err_set(err, VR_EINVAL, "job %s chunk %d: name too long", id, i);
    return 0;
}

int ctl_chunk_url_ready(struct ctl *c, const char *id, int idx, int ranges, char *path,
                        size_t n)
{
    char rel[400];
    for (int sidecar = 0; sidecar <= !!ranges; sidecar++) {
        vr_err e = { 0 };
        if (ctl_chunk_url(c, id, idx, sidecar, rel, sizeof rel, path, n, &e) < 0)
            return 0;
        /* a store that does not answer is not a missing chunk: the fetch
         * says why (ctl_chunk_outputs would queue every chunk again) */
        int rc = http_exists(path, &e);
        if (rc == 0)
            return 0;
        if (rc < 0)
            log_warn("job %s: chunk %d: %s", id, idx, e.msg);
    }
    return 1;
}

/* Copies object o into the temporary file fd by range GETs. */
static int ctl_chunk_url_copy(struct ctl *c, struct http_obj *o, int fd, const char *tmp,
                              vr_err *err)
{
    uint8_t *buf = malloc(CTL_CHUNK_URL_BLOCK);
    if (!buf)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int64_t size = http_obj_size(o);
    int rc = 0;
    for (int64_t off = 0; rc == 0 && off < size;) {
        size_t len = size - off < CTL_CHUNK_URL_BLOCK ? (size_t)(size - off) : CTL_CHUNK_URL_BLOCK;
        if ((rc = http_obj_read(o, off, buf, len, err)) < 0)
            break;
        for (size_t w = 0; rc == 0 && w < len;) {
            ssize_t k = write(fd, buf + w, len - w);
            if (k < 0)
                rc = storage_errno(errno, "cannot write", tmp, err);
            else
                w += (size_t)k;
        }
        off += (int64_t)len;
        ctl_loop_pulse(c); /* a long read going on block by block is not a stuck loop */
    }
    free(buf);
    return rc;
}

/* Reads one object of chunk i into dirfd (the job's out/). */
static int ctl_chunk_url_get(struct ctl *c, const char *id, int i, int sidecar, long long max,
                             int dirfd, vr_err *err)
{
    char rel[400], url[URL_ROOT_MAX + 400], path[BENEATH_FD_PATH_MAX + 64], tmp[STORAGE_PATH_MAX];
    int rc = ctl_chunk_url(c, id, i, sidecar, rel, sizeof rel, url, sizeof url, err);
    if (rc < 0)
        return rc;
    struct http_obj *o = NULL;
    if ((rc = http_obj_open(url, NULL, &o, err)) < 0)
        return rc;
    char shown[URL_ROOT_MAX + 400];
    http_io_shown(url, shown, sizeof shown);
    long long size = http_obj_size(o);
    if (size > max) { /* refused before a byte of it is read (ctl_stitch.c's bound) */
        const char *what = sidecar ? "sidecar" : "output";
        log_warn("job %s: chunk %d's %s %s is %lld bytes, more than its frames can hold "
                 "(%lld): not read; computed again", id, i, what, shown, size, max);
        rq_event(c->q, id, "chunk %d: its %s is %lld bytes, more than its frames can hold; "
                 "computed again", i, what, size);
        http_obj_free(&o);
        return CTL_CHUNK_DAMAGED;
    }
    int fd = -1;
    beneath_fd_path(dirfd, strrchr(rel, '/') + 1, path, sizeof path);
    if ((rc = storage_temp(path, tmp, sizeof tmp, &fd, err)) == 0) {
        rc = ctl_chunk_url_copy(c, o, fd, tmp, err);
        close(fd);
        rc = rc < 0 ? rc : storage_commit(tmp, path, err);
        if (rc < 0)
            storage_abort(tmp);
    }
    http_obj_free(&o);
    return rc;
}

int ctl_chunk_url_fetch(struct ctl *c, const char *id, int i, int ranges, const long long max[2],
                        vr_err *err)
{
    char rel[256], fdp[BENEATH_FD_PATH_MAX];
    snprintf(rel, sizeof rel, "jobs/%.*s/out", JOB_ID_MAX, id);
    int dirfd = ctl_storage_open(c, rel, 1, fdp, sizeof fdp, NULL, err);
    if (dirfd < 0)
        return dirfd;
    int rc = ctl_chunk_url_get(c, id, i, 0, max[0], dirfd, err);
    if (rc == 0 && ranges)
        rc = ctl_chunk_url_get(c, id, i, 1, max[1], dirfd, err);
    close(dirfd);
    if (rc < 0)
        vr_err_prefix(err, "chunk %d", i);
    return rc;
}

/* Each chunk object of the job by its manifest, for a store that deletes
 * no collection: 0, or <0 (how many were left, the last's error, in err). */
static int ctl_chunk_url_drop(struct ctl *c, const char *id, vr_err *err)
{
    char mpath[STORAGE_PATH_MAX], orel[400], url[URL_ROOT_MAX + 400], rel[256];
    struct job_manifest man;
    snprintf(rel, sizeof rel, "jobs/%.*s/manifest.json", JOB_ID_MAX, id); /* its path's */
    int rc = storage_path(c->storage, rel, mpath, sizeof mpath, err);
    if (rc < 0 || (rc = job_manifest_read(mpath, &man, err)) < 0)
        return rc;
    /* an elastic job's pieces without a chunk answer 404 */
    int left = 0;
    vr_err e = { 0 };
    for (int i = 0; i < man.nchunks; i++)
        for (int sidecar = 0; sidecar <= !!man.ranges; sidecar++)
            if (ctl_chunk_url(c, id, i, sidecar, orel, sizeof orel, url, sizeof url, &e) < 0 ||
                http_delete(url, &e) < 0)
                left++;
    job_manifest_release(&man);
    return left ? vr_err_set(err, e.code, "%d chunk objects left (the last: %s)", left, e.msg)
                : 0;
}

int ctl_chunk_url_sweep(struct ctl *c, const char *id, char *shown, size_t n, vr_err *err)
{
    char url[URL_ROOT_MAX + 128];
    if (snprintf(url, sizeof url, "%sjobs/%.*s/", c->storage_url, JOB_ID_MAX, id) >=
        (int)sizeof url)
        return vr_err_set(err, VR_EINVAL, "job %s: its objects' URL is too long", id);
    http_io_shown(url, shown, n);
    /* everything the job's workers put there: chunks, sidecars, a pieces'
     * outputs, and the temporaries of attempts killed between PUT and MOVE */
    int rc = http_delete_tree(url, c->stop, err);
    if (rc == VR_ENOTSUP)
        rc = ctl_chunk_url_drop(c, id, err);
    return rc;
}
