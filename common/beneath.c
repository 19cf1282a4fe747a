/*
 * beneath.c - opening paths beneath a root directory without following
 * links out of it (see beneath.h).
 */
#define _GNU_SOURCE
#include "beneath.h"

#include "storage.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- names ---- */

/* Next component of *p (skipping empty ones and "."): its start, length
 * in *len; NULL at the end. */
static const char *beneath_next(const char **p, size_t *len)
{
    for (;;) {
        const char *s = *p;
        while (*s == '/')
            s++;
        if (!*s)
            return NULL;
        size_t k = strcspn(s, "/");
        *p = s + k;
        if (k == 1 && s[0] == '.')
            continue;
        *len = k;
        return s;
    }
}

static int beneath_is_dotdot(const char *s, size_t len)
{
    return len == 2 && s[0] == '.' && s[1] == '.';
}

int beneath_rel(const char *root, const char *path, char *rel, size_t n)
{
    if (!path || path[0] != '/' || n == 0)
        return VR_EINVAL;
    rel[0] = '\0';
    /* compare component by component, so /srv/vr2 is not under /srv/vr */
    const char *r = root, *p = path;
    size_t rl, pl, used = 0;
    const char *rc;
    while ((rc = beneath_next(&r, &rl))) {
        const char *pc = beneath_next(&p, &pl);
        if (!pc || beneath_is_dotdot(pc, pl))
            return pc ? VR_EINVAL : VR_ENOENT;
        if (rl != pl || memcmp(rc, pc, rl))
            return VR_ENOENT;
    }
    const char *pc;
    while ((pc = beneath_next(&p, &pl))) {
        if (beneath_is_dotdot(pc, pl))
            return VR_EINVAL;
        if (used + pl + 2 > n)
            return VR_EINVAL;
        if (used)
            rel[used++] = '/';
        memcpy(rel + used, pc, pl);
        used += pl;
        rel[used] = '\0';
    }
    return 0;
}

void beneath_fd_path(int fd, const char *name, char *out, size_t n)
{
    if (name)
        snprintf(out, n, "/proc/self/fd/%d/%s", fd, name);
    else
        snprintf(out, n, "/proc/self/fd/%d", fd);
}

/* ---- opening ---- */

/* -EXDEV when rel is absolute or has a ".." component: a path from Redis
 * never needs one, so neither way of opening accepts it. */
static int beneath_check(const char *rel)
{
    if (rel[0] == '/')
        return -EXDEV;
    const char *p = rel, *c;
    size_t len;
    while ((c = beneath_next(&p, &len)))
        if (beneath_is_dotdot(c, len))
            return -EXDEV;
    return 0;
}

int beneath_open_walk(int dirfd, const char *rel, int flags, mode_t mode)
{
    int rc = beneath_check(rel);
    if (rc < 0)
        return rc;
    int cur = dirfd;
    const char *p = rel, *c;
    size_t len;
    char comp[256];
    c = beneath_next(&p, &len);
    if (!c) /* the root itself */
        return (rc = openat(dirfd, ".", flags | O_CLOEXEC, mode)) < 0 ? -errno : rc;
    for (;;) {
        if (len >= sizeof comp) {
            rc = -ENAMETOOLONG;
            break;
        }
        memcpy(comp, c, len);
        comp[len] = '\0';
        size_t nlen = 0;
        const char *next = beneath_next(&p, &nlen);
        /* O_NOFOLLOW on every component: a link is an error (ELOOP, or
         * ENOTDIR for a link where a directory must be), never a jump */
        int fd = next ? openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                      : openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
        rc = fd < 0 ? -errno : fd;
        if (cur != dirfd)
            close(cur);
        if (fd < 0 || !next)
            return rc;
        cur = fd;
        c = next;
        len = nlen;
    }
    if (cur != dirfd)
        close(cur);
    return rc;
}

int beneath_open(int dirfd, const char *rel, int flags, mode_t mode)
{
    int rc = beneath_check(rel);
    if (rc < 0)
        return rc;
    struct open_how how = {
        .flags = (unsigned long long)(flags | O_CLOEXEC),
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    long fd = syscall(SYS_openat2, dirfd, rel[0] ? rel : ".", &how, sizeof how);
    if (fd >= 0)
        return (int)fd;
    if (errno != ENOSYS)
        return -errno;
    return beneath_open_walk(dirfd, rel, flags, mode);
}

int beneath_open_file(int dirfd, const char *rel, const char *what, const char *shown,
                      const char *root, long long *size, vr_err *err)
{
    int fd = beneath_open(dirfd, rel, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY, 0);
    if (fd < 0)
        return beneath_err(fd, what, shown, root, err);
    struct stat st;
    int rc = 0, fl;
    if (fstat(fd, &st) < 0)
        rc = beneath_err(errno, what, shown, root, err);
    else if (!S_ISREG(st.st_mode))
        rc = vr_err_set(err, VR_EFORMAT, "%s %s: not a regular file (%s)", what, shown,
                        storage_kind(st.st_mode));
    else if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
        rc = beneath_err(errno, what, shown, root, err);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    if (size)
        *size = (long long)st.st_size;
    return fd;
}

int beneath_mkdirs(int dirfd, const char *rel, mode_t mode)
{
    int rc = beneath_check(rel);
    if (rc < 0)
        return rc;
    int cur = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cur < 0)
        return -errno;
    const char *p = rel, *c;
    size_t len;
    char comp[256];
    while ((c = beneath_next(&p, &len))) {
        if (len >= sizeof comp) {
            close(cur);
            return -ENAMETOOLONG;
        }
        memcpy(comp, c, len);
        comp[len] = '\0';
        if (mkdirat(cur, comp, mode) < 0 && errno != EEXIST) {
            rc = -errno;
            close(cur);
            return rc;
        }
        /* one component, no "..": O_NOFOLLOW alone keeps it beneath */
        int fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        rc = -errno;
        close(cur);
        if (fd < 0)
            return rc;
        cur = fd;
    }
    return cur;
}

/* ---- messages ---- */

int beneath_err(int e, const char *what, const char *shown, const char *root, vr_err *err)
{
    if (e < 0)
        e = -e;
    switch (e) {
    case ELOOP:
    case ENOTDIR:
        return vr_err_set(err, VR_EINVAL, "%s %s: a symbolic link or a non-directory in the "
                          "path (links are not followed under %s)", what, shown, root);
    case EXDEV:
        return vr_err_set(err, VR_EINVAL, "%s %s: the path leaves %s ('..' or a link)", what,
                          shown, root);
    case ENOENT:
        return vr_err_set(err, VR_ENOENT, "%s %s: no such file or directory", what, shown);
    case ENOSPC:
    case EDQUOT:
        return vr_err_set(err, VR_ENOSPC, "%s %s: " STORAGE_DISK_FULL, what, shown);
    case EACCES:
    case EROFS:
    case EPERM: /* the host's mount or permissions (storage_errno says the same) */
        return vr_err_set(err, VR_EACCES, "%s %s: %s", what, shown, strerror(e));
    default:
        return vr_err_set(err, VR_EIO, "%s %s: %s", what, shown, strerror(e));
    }
}

void beneath_unmask(vr_err *err, int fd, const char *real)
{
    if (!err || fd < 0 || !real)
        return;
    char pat[40], out[sizeof err->msg];
    snprintf(pat, sizeof pat, "/proc/self/fd/%d", fd);
    size_t pl = strlen(pat), used = 0;
    int changed = 0;
    const char *s = err->msg, *m;
    while ((m = strstr(s, pat)) && used < sizeof out) {
        int other = m[pl] >= '0' && m[pl] <= '9'; /* fd 1 in /proc/self/fd/12 */
        used += (size_t)snprintf(out + used, sizeof out - used, "%.*s%s", (int)(m - s), s,
                                 other ? pat : real);
        changed |= !other;
        s = m + pl;
    }
    if (!changed)
        return;
    if (used < sizeof out)
        snprintf(out + used, sizeof out - used, "%s", s);
    snprintf(err->msg, sizeof err->msg, "%s", out);
}
