/*
 * storage_out.c - what a command's output may replace (see storage.h,
 * "outputs"): only a regular file the user may write, only when told to
 * (-y), and never one of the command's inputs or another of its outputs.
 * A device node, FIFO or directory at an output's name stays what it was
 * (issue 27, findings 6 and 7; issue 28, item 11).
 */
#include "storage.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int storage_output_check(const char *path, int may_replace, vr_err *err)
{
    struct stat st;
    /* stat, not lstat: a link is judged by what it points to, so a link to
     * /dev/null is refused as a character device */
    if (stat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        return storage_errno(errno, "cannot check the output", path, err);
    }
    if (!S_ISREG(st.st_mode))
        return vr_err_set(err, VR_EINVAL, "%s is %s: an output replaces only a regular file",
                          path, storage_kind(st.st_mode));
    if (!may_replace)
        return vr_err_set(err, VR_EINVAL, "%s exists (-y replaces it)", path);
    if (access(path, W_OK) < 0)
        return vr_err_set(err, VR_EINVAL, "%s is not writable by you: not replaced", path);
    return 0;
}

/* How a file is known: device and inode when it exists, else the resolved
 * name its output would get (its directory's real path and its base). */
struct file_id {
    int exists;
    dev_t dev;
    ino_t ino;
    char name[PATH_MAX + NAME_MAX + 2];
};

static void file_id_of(const char *path, struct file_id *id)
{
    struct stat st;
    memset(id, 0, sizeof *id);
    if (stat(path, &st) == 0) {
        id->exists = 1;
        id->dev = st.st_dev;
        id->ino = st.st_ino;
        return;
    }
    char d[PATH_MAX], b[PATH_MAX], real[PATH_MAX];
    snprintf(d, sizeof d, "%s", path);
    snprintf(b, sizeof b, "%s", path);
    if (realpath(dirname(d), real))
        snprintf(id->name, sizeof id->name, "%s/%s", real, basename(b));
    else
        snprintf(id->name, sizeof id->name, "%s", path);
}

static int file_id_same(const struct file_id *a, const struct file_id *b)
{
    if (a->exists || b->exists)
        return a->exists && b->exists && a->dev == b->dev && a->ino == b->ino;
    return !strcmp(a->name, b->name);
}

int storage_outputs_distinct(const struct storage_file *in, int nin,
                             const struct storage_file *out, int nout, vr_err *err)
{
    for (int i = 0; i < nout; i++) {
        if (!out[i].path)
            continue;
        struct file_id o;
        file_id_of(out[i].path, &o);
        for (int j = 0; j < nin; j++) {
            struct file_id x;
            if (!in[j].path)
                continue;
            file_id_of(in[j].path, &x);
            if (x.exists && file_id_same(&o, &x))
                return vr_err_set(err, VR_EINVAL, "%s %s is the %s %s: the output would "
                                  "overwrite it", out[i].what, out[i].path, in[j].what,
                                  in[j].path);
        }
        for (int j = 0; j < i; j++) {
            struct file_id x;
            if (!out[j].path)
                continue;
            file_id_of(out[j].path, &x);
            if (file_id_same(&o, &x))
                return vr_err_set(err, VR_EINVAL, "%s %s and %s %s are the same file",
                                  out[j].what, out[j].path, out[i].what, out[i].path);
        }
    }
    return 0;
}

int storage_outputs_check(const struct storage_file *in, int nin,
                          const struct storage_file *out, int nout, int may_replace,
                          vr_err *err)
{
    int rc = storage_outputs_distinct(in, nin, out, nout, err);
    for (int i = 0; rc == 0 && i < nout; i++)
        if (out[i].path && (rc = storage_output_check(out[i].path, may_replace, err)) < 0)
            return rc;
    return rc;
}
