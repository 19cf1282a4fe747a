/*
 * ctl_paths_owner.c - a submitter's job touches files as its submitter
 * (issue 41, finding 3). The controller often runs as root; the Redis user
 * that asked for a job (vrsub-NAME, recorded as the job's `owner` by
 * ctl_submitters.c) is who the job acts for, and NAME's roots,
 * INPUT-ROOT/NAME and OUTPUT-ROOT/NAME, say which Unix user that is: the
 * owner of each root's directory. So whenever a job's files are opened
 * (taken, cut, stitched; not only at the intake), an owned job's
 *
 * - paths must lie under NAME's roots (by name; opened beneath the
 *   controller's roots, following no link, by ctl_paths.c);
 * - input must be readable by the owner of INPUT-ROOT/NAME by its mode
 *   bits (its owner's, its group's when that user's primary group, or
 *   others'): a 0600 file of another user put or linked there is refused;
 * - output is created owned by the owner of OUTPUT-ROOT/NAME (when the
 *   controller may give it, as root).
 *
 * Every job's output gets the input's permission bits at most (0644 at
 * most), so a 0600 input never becomes a 0644 output, and a job that may
 * not replace its output (`-n`, the default) publishes with an atomic
 * rename-noreplace (storage_commit_as), whoever wrote its spec.
 */
#include "ctl.h"

#include "beneath.h"
#include "rq_submit.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* root/NAME's directory, a real one (no link), into st. */
static int ctl_owner_root(const char *root, const char *name, const char *what,
                          char *dir, size_t n, struct stat *st, vr_err *err)
{
    snprintf(dir, n, "%s/%s", root, name);
    if (lstat(dir, st) < 0 || !S_ISDIR(st->st_mode))
        return vr_err_set(err, VR_EINVAL, "submitter %s's %s root %s is not a directory",
                          name, what, dir);
    return 0;
}

/* 1 when a file (st) may be read by uid (primary group gid) by its mode. */
static int ctl_owner_may_read(const struct stat *st, uid_t uid, gid_t gid)
{
    if (uid == 0)
        return 1;
    if (st->st_uid == uid)
        return (st->st_mode & S_IRUSR) != 0;
    if (st->st_gid == gid)
        return (st->st_mode & S_IRGRP) != 0;
    return (st->st_mode & S_IROTH) != 0;
}

int ctl_paths_owner(struct ctl *c, const struct job_spec *js, const struct stat *si,
                    struct ctl_paths *p, vr_err *err)
{
    p->pub.noreplace = !js->replace;
    p->pub.mode = si ? (unsigned)(si->st_mode & 0644) : 0644;
    p->pub.uid = p->pub.gid = -1;
    char jk[128], owner[RQ_SUBMITTER_MAX + 1] = "";
    rq_key_job(jk, sizeof jk, js->id);
    int rc = rq_hget(c->q, jk, "owner", owner, sizeof owner, err);
    if (rc < 0)
        return rc;
    if (!owner[0])
        return 0; /* the operator's job: the controller's roots */
    if (!rq_submitter_name_valid(owner))
        return vr_err_set(err, VR_EINVAL, "job %s: its owner is no submitter's name", js->id);
    char dir[STORAGE_PATH_MAX + RQ_SUBMITTER_MAX + 2], rel[JOB_PATH_MAX];
    struct stat ri, ro;
    if ((rc = ctl_owner_root(c->input_root, owner, "input", dir, sizeof dir, &ri, err)) < 0)
        return rc;
    if (url_root_is_url(js->input) || beneath_rel(dir, js->input, rel, sizeof rel) < 0)
        return vr_err_set(err, VR_EINVAL, "input %s is outside submitter %s's input root %s",
                          js->input, owner, dir);
    if (si && !ctl_owner_may_read(si, ri.st_uid, ri.st_gid))
        return vr_err_set(err, VR_EACCES, "input %s is not readable by submitter %s (uid %u, "
                          "the owner of %s): mode %04o, owner uid %u", js->input, owner,
                          (unsigned)ri.st_uid, dir, (unsigned)(si->st_mode & 07777),
                          (unsigned)si->st_uid);
    if ((rc = ctl_owner_root(c->output_root, owner, "output", dir, sizeof dir, &ro, err)) < 0)
        return rc;
    if (url_root_is_url(js->output) || beneath_rel(dir, js->output, rel, sizeof rel) < 0)
        return vr_err_set(err, VR_EINVAL, "output %s is outside submitter %s's output root %s",
                          js->output, owner, dir);
    if (geteuid() == 0) {
        p->pub.uid = ro.st_uid;
        p->pub.gid = ro.st_gid;
    }
    return 0;
}
