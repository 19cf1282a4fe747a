/*
 * ctl_paths.c - the files a job makes the controller touch, held beneath
 * the roots it was started with.
 *
 * The controller often runs as root, and a job's input and output paths
 * come from its spec, which whoever can submit a job (or write Redis)
 * chooses. So the input must lie under --input-root and the output under
 * --output-root (both the storage root by default), checked here by name
 * (no "..", no path outside the root) and then opened from the root's
 * directory without following any link (common/beneath.h): a spec naming
 * /etc/passwd, /etc/x.mkv or root/../elsewhere is refused with a message
 * naming the root and its option, and a link planted inside a root is not
 * followed out of it. Chunk files are opened the same way beneath the
 * storage root, where workers write.
 *
 * libav is handed "/proc/self/fd/N" names for the descriptors opened here
 * (beneath.h says why that is safe); messages are turned back into the
 * user's names with ctl_paths_unmask.
 */
#include "ctl.h"

#include "beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- names under a root ---- */

/* path's part under root into rel, or an error naming the root and its
 * option. */
static int ctl_under(const char *what, const char *path, const char *root, const char *opt,
                     char *rel, size_t n, vr_err *err)
{
    int rc = beneath_rel(root, path, rel, n);
    if (rc == VR_ENOENT)
        return vr_err_set(err, VR_EINVAL, "%s %s is outside the %s root %s (vr-controller %s)",
                          what, path, what, root, opt);
    if (rc < 0)
        return vr_err_set(err, VR_EINVAL, "%s %s: not an absolute path without '..' "
                          "(it must lie under %s, vr-controller %s)", what, path, root, opt);
    return 0;
}

static int ctl_open_root(const char *root, vr_err *err)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return storage_errno(errno, "cannot open the root", root, err);
    return fd;
}

/* ---- a job's input and output ---- */

void ctl_paths_close(struct ctl_paths *p)
{
    if (p->in >= 0)
        close(p->in);
    if (p->out_dir >= 0)
        close(p->out_dir);
    p->in = p->out_dir = -1;
}

/* The output's directory opened beneath the output root (created when
 * `create`); -ENOENT when it does not exist and !create. */
static int ctl_out_dir(struct ctl *c, const char *dir_rel, int create)
{
    int root = open(c->output_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return -errno;
    int fd = create ? beneath_mkdirs(root, dir_rel, 0755)
                    : beneath_open(root, dir_rel, O_RDONLY | O_DIRECTORY, 0);
    close(root);
    return fd;
}

static int ctl_paths_output(struct ctl *c, const struct job_spec *js, unsigned flags,
                            const char *out_rel, const char *slash, const struct stat *si,
                            struct ctl_paths *p, vr_err *err);

int ctl_paths_open(struct ctl *c, const struct job_spec *js, unsigned flags,
                   struct ctl_paths *p, vr_err *err)
{
    memset(p, 0, sizeof *p);
    p->in = p->out_dir = -1;
    char in_rel[JOB_PATH_MAX], out_rel[JOB_PATH_MAX] = "-";
    int rc;
    if ((!url_root_is_url(js->input) &&
         (rc = ctl_under("input", js->input, c->input_root, "--input-root", in_rel,
                         sizeof in_rel, err)) < 0) ||
        (!url_root_is_url(js->output) &&
         (rc = ctl_under("output", js->output, c->output_root, "--output-root", out_rel,
                         sizeof out_rel, err)) < 0))
        return rc;
    char *slash = strrchr(out_rel, '/');
    const char *name = slash ? slash + 1 : out_rel;
    if (!*name)
        return vr_err_set(err, VR_EINVAL, "output %s: names a directory, not a file", js->output);
    struct stat si = { 0 };
    if (url_root_is_url(js->input)) { /* read by ranges through the store (http_io.h) */
        if ((rc = url_root_check(js->input, c->input_url_root, "vr-controller --input-root",
                                 err)) < 0)
            return rc;
        snprintf(p->in_path, sizeof p->in_path, "%s", js->input);
        if ((rc = ctl_paths_owner(c, js, NULL, p, err)) < 0)
            return rc;
        return ctl_paths_output(c, js, flags, out_rel, slash, &si, p, err);
    }
    /* O_NONBLOCK: a FIFO at the input's name must not hang the controller */
    int root = ctl_open_root(c->input_root, err);
    if (root < 0)
        return root;
    p->in = beneath_open(root, in_rel, O_RDONLY | O_NONBLOCK, 0);
    close(root);
    if (p->in < 0) {
        rc = beneath_err(p->in, "input", js->input, c->input_root, err);
        p->in = -1;
        return rc;
    }
    if (fstat(p->in, &si) < 0 || !S_ISREG(si.st_mode)) {
        ctl_paths_close(p);
        return vr_err_set(err, VR_EINVAL, "input %s: not a regular file", js->input);
    }
    if ((rc = ctl_paths_owner(c, js, &si, p, err)) < 0) {
        ctl_paths_close(p);
        return rc;
    }
    fcntl(p->in, F_SETFL, fcntl(p->in, F_GETFL) & ~O_NONBLOCK);
    beneath_fd_path(p->in, NULL, p->in_path, sizeof p->in_path);
    return ctl_paths_output(c, js, flags, out_rel, slash, &si, p, err);
}

/* The output's part of ctl_paths_open; si: the input file's (zeroed for a
 * URL input). */
static int ctl_paths_output(struct ctl *c, const struct job_spec *js, unsigned flags,
                            const char *out_rel, const char *slash, const struct stat *si,
                            struct ctl_paths *p, vr_err *err)
{
    const char *name = slash ? slash + 1 : out_rel;
    struct stat so;
    int rc;
    if (url_root_is_url(js->output) && (rc = ctl_url_out_open(c, js, flags, p, err)) < 0) {
        ctl_paths_close(p);
        return rc;
    }
    if (url_root_is_url(js->output))
        return 0;
    char dir_rel[JOB_PATH_MAX];
    snprintf(dir_rel, sizeof dir_rel, "%.*s", slash ? (int)(slash - out_rel) : 0, out_rel);
    snprintf(p->out_dir_real, sizeof p->out_dir_real, "%.*s", (int)(strrchr(js->output, '/') -
                                                                   js->output), js->output);
    int fd = ctl_out_dir(c, dir_rel, (flags & CTL_PATHS_OUTPUT) != 0);
    if (fd == -ENOENT && !(flags & CTL_PATHS_OUTPUT))
        return 0; /* created by the stitch; nothing there to overwrite */
    if (fd < 0) {
        rc = beneath_err(fd, "output directory", p->out_dir_real[0] ? p->out_dir_real : "/",
                         c->output_root, err);
        ctl_paths_close(p);
        return rc;
    }
    if (p->in >= 0 && fstatat(fd, name, &so, AT_SYMLINK_NOFOLLOW) == 0 &&
        so.st_dev == si->st_dev && so.st_ino == si->st_ino) {
        close(fd);
        ctl_paths_close(p);
        return vr_err_set(err, VR_EINVAL, "output %s is the input %s: the output would "
                          "overwrite it", js->output, js->input);
    }
    /* what the publish would refuse (it replaces only a regular file, a
     * link judged by its target) is refused before any work (finding 11) */
    if (fstatat(fd, name, &so, 0) == 0 && !S_ISREG(so.st_mode)) {
        close(fd);
        ctl_paths_close(p);
        return vr_err_set(err, VR_EINVAL, "output %s is %s: an output replaces only a regular "
                          "file", js->output, storage_kind(so.st_mode));
    }
    /* -n is the controller's to enforce too: a spec written by hand does
     * not replace a file (issue 41, finding 3); checked when the job is
     * taken (a stitch resumed after its publish finds its own output), and
     * at the publish by a rename-noreplace (ctl_paths_owner.c) */
    if (!(flags & CTL_PATHS_OUTPUT) && !js->replace && fstatat(fd, name, &so, 0) == 0) {
        close(fd);
        ctl_paths_close(p);
        return vr_err_set(err, VR_EINVAL, "output %s exists and the job may not replace it "
                          "(vrctl submit -y)", js->output);
    }
    if (!(flags & CTL_PATHS_OUTPUT)) {
        close(fd);
        return 0;
    }
    p->out_dir = fd;
    beneath_fd_path(p->out_dir, name, p->out_path, sizeof p->out_path);
    return 0;
}

int ctl_output_dir_open(struct ctl *c, const struct job_spec *js, char *dir, size_t n,
                        char *base, size_t nb)
{
    char out_rel[JOB_PATH_MAX], dir_rel[JOB_PATH_MAX];
    if (ctl_under("output", js->output, c->output_root, "--output-root", out_rel,
                  sizeof out_rel, NULL) < 0)
        return VR_EINVAL;
    char *slash = strrchr(out_rel, '/');
    snprintf(base, nb, "%s", slash ? slash + 1 : out_rel);
    snprintf(dir_rel, sizeof dir_rel, "%.*s", slash ? (int)(slash - out_rel) : 0, out_rel);
    const char *rs = strrchr(js->output, '/');
    snprintf(dir, n, "%.*s", rs ? (int)(rs - js->output) : 0, js->output);
    return base[0] ? ctl_out_dir(c, dir_rel, 0) : VR_EINVAL;
}

void ctl_paths_unmask(const struct ctl_paths *p, const struct job_spec *js, vr_err *err)
{
    beneath_unmask(err, p->in, js->input);
    beneath_unmask(err, p->out_dir, p->out_dir_real[0] ? p->out_dir_real : "");
}

/* ---- the storage root ---- */

int ctl_storage_open(struct ctl *c, const char *rel, int dir, char *fdpath, size_t n,
                     long long *size, vr_err *err)
{
    char real[STORAGE_PATH_MAX];
    snprintf(real, sizeof real, "%.3000s/%.1000s", c->storage, rel);
    int root = ctl_open_root(c->storage, err);
    if (root < 0)
        return root;
    /* a file: never waited on (a FIFO), a regular one only (issue 41, finding 1) */
    int fd = dir ? beneath_mkdirs(root, rel, 0755)
                 : beneath_open_file(root, rel, "cannot open", real, c->storage, size, err);
    close(root);
    if (fd < 0)
        return dir ? beneath_err(fd, "cannot create directory", real, c->storage, err) : fd;
    beneath_fd_path(fd, NULL, fdpath, n);
    return fd;
}
