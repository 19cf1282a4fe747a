/*
 * ctl_url_out.c - a job's output by URL (vrctl submit -o https://...): the
 * fleet's answer to `vr-worker process -o URL` (media/out_dest.h).
 *
 * The URL must lie under the controller's --output-root URL, as a path
 * lies under its directory root. The chunks stay where they always go
 * (beneath the storage root); the stitch writes the output, checked as
 * ever, into a directory of its own beneath the storage root,
 * url-out/<hash of the URL>/<the URL's file name>, and the publish then
 * uploads it whole (http_put.h: PUT to a temporary name beside the
 * object, one MOVE) and removes the local copy. So nothing half written
 * ever appears under the output's name, and what the store holds are the
 * bytes the local path would have held. Without -y an object already
 * there is refused when the job is taken (HEAD) and by the store at the
 * MOVE (Overwrite: F).
 */
#include "ctl.h"

#include "beneath.h"
#include "test_gate.h"
#include "http_put.h"
#include "log.h"
#include "out_dest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The staging directory's name under the storage root: one a URL (one
 * job in flight writes a given output: vrctl submit refuses a second). */
static void ctl_url_out_dir(const char *url, char *rel, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *s = (const unsigned char *)url; *s; s++)
        h = (h ^ *s) * 1099511628211ull;
    snprintf(rel, n, "url-out/%016llx", (unsigned long long)h);
}

int ctl_url_out_open(struct ctl *c, const struct job_spec *js, unsigned flags,
                     struct ctl_paths *p, vr_err *err)
{
    int rc = url_root_check(js->output, c->output_url_root, "vr-controller --output-root", err);
    if (rc < 0)
        return rc;
    /* -n is checked when the job is taken; a stitch resumed after its
     * upload would find its own object (the MOVE's Overwrite: F guards) */
    char base[OUT_DEST_NAME_MAX], rel[64];
    int take = !(flags & CTL_PATHS_OUTPUT);
    if ((rc = out_dest_url_check(js->output, !take || js->replace, base, sizeof base, err)) < 0 ||
        take)
        return rc;
    ctl_url_out_dir(js->output, rel, sizeof rel);
    snprintf(p->out_dir_real, sizeof p->out_dir_real, "%.900s/%s", c->storage, rel);
    int root = open(c->storage, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return storage_errno(errno, "cannot open the storage root", c->storage, err);
    int fd = beneath_mkdirs(root, rel, 0755);
    close(root);
    if (fd < 0)
        return beneath_err(fd, "cannot create directory", p->out_dir_real, c->storage, err);
    p->out_dir = fd;
    beneath_fd_path(fd, base, p->out_path, sizeof p->out_path);
    return 0;
}

int ctl_url_out_publish(const struct job_spec *js, const struct ctl_paths *p, vr_err *err)
{
    if (!url_root_is_url(js->output))
        return 0;
    test_gate("VR_TEST_URL_OUT_GATE", "the upload"); /* tests only: a slow store */
    int rc = http_put_file(js->output, p->out_path, js->replace, err);
    unlink(p->out_path);
    rmdir(p->out_dir_real); /* when nothing else is left in it */
    return rc;
}

void ctl_url_out_remove(const char *output, const char *out_path)
{
    vr_err e = { 0 };
    if (!url_root_is_url(output))
        unlink(out_path); /* through the directory opened beneath the output root */
    else if (http_delete(output, &e) < 0)
        log_warn("%s", e.msg);
}
