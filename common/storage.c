/*
 * storage.c - paths under the storage root and durable, atomic writes
 * (see storage.h). Commit order for a chunk output is: data fsync'd, renamed,
 * directory fsync'd, and only then recorded in Redis.
 */
#define _GNU_SOURCE
#include "storage.h"

#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <openssl/evp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

int storage_errno(int e, const char *what, const char *path, vr_err *err)
{
    if (e == ENOSPC || e == EDQUOT)
        return vr_err_set(err, VR_ENOSPC, "%s %s: " STORAGE_DISK_FULL, what, path);
    if (e == ENOENT)
        return vr_err_set(err, VR_ENOENT, "%s %s: %s", what, path, strerror(e));
    if (e == EACCES || e == EROFS || e == EPERM)
        return vr_err_set(err, VR_EACCES, "%s %s: %s", what, path, strerror(e));
    return vr_err_set(err, VR_EIO, "%s %s: %s", what, path, strerror(e));
}

/* ---- checksums ---- */

int storage_sum_fds(const int *fds, int n, char out[STORAGE_SUM_LEN], vr_err *err)
{
    enum { BUF = 1 << 20 };
    unsigned char *buf = malloc(BUF), d[EVP_MAX_MD_SIZE];
    EVP_MD_CTX *h = EVP_MD_CTX_new(); /* libcrypto's SHA-256, as the webhook's HMAC */
    if (!buf || !h || EVP_DigestInit_ex(h, EVP_sha256(), NULL) != 1) {
        free(buf);
        EVP_MD_CTX_free(h);
        return vr_err_set(err, VR_ENOMEM, "cannot start a checksum (out of memory)");
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        off_t at = 0;
        ssize_t got;
        while ((got = pread(fds[i], buf, BUF, at)) > 0) {
            EVP_DigestUpdate(h, buf, (size_t)got);
            at += got;
        }
        if (got < 0)
            rc = vr_err_set(err, VR_EIO, "cannot read a file to sum it: %s", strerror(errno));
    }
    unsigned len = 0;
    if (rc == 0 && EVP_DigestFinal_ex(h, d, &len) != 1)
        rc = vr_err_set(err, VR_EIO, "cannot finish a checksum");
    free(buf);
    EVP_MD_CTX_free(h);
    if (rc < 0)
        return rc;
    int k = snprintf(out, STORAGE_SUM_LEN, "sha256:");
    for (unsigned i = 0; i < len && k + 2 < STORAGE_SUM_LEN; i++)
        k += snprintf(out + k, STORAGE_SUM_LEN - k, "%02x", d[i]);
    return 0;
}

/* ---- paths ---- */

int storage_path(const char *root, const char *rel, char *out, size_t n, vr_err *err)
{
    if (!rel || !*rel || rel[0] == '/')
        return vr_err_set(err, VR_EINVAL, "storage path '%s' must be relative to the root",
                          rel ? rel : "");
    for (const char *p = rel; *p;) {
        const char *s = strchr(p, '/');
        size_t len = s ? (size_t)(s - p) : strlen(p);
        if (len == 0 || (len == 2 && p[0] == '.' && p[1] == '.'))
            return vr_err_set(err, VR_EINVAL, "storage path '%s': empty or '..' component", rel);
        p += len + (s ? 1 : 0);
    }
    int w = snprintf(out, n, "%s/%s", root, rel);
    if (w < 0 || (size_t)w >= n)
        return vr_err_set(err, VR_EINVAL, "storage path '%s/%s' is too long", root, rel);
    return 0;
}

int storage_mkdirs(const char *dir, vr_err *err)
{
    char buf[STORAGE_PATH_MAX];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof buf)
        return vr_err_set(err, VR_EINVAL, "directory name too long");
    memcpy(buf, dir, len + 1);
    for (char *p = buf + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return storage_errno(errno, "cannot create directory", buf, err);
            *p = c;
            if (c == '\0')
                break;
        }
    }
    return 0;
}

/* ---- durability ---- */

static int storage_sync_dir_of(const char *path, vr_err *err)
{
    char buf[STORAGE_PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    const char *dir = dirname(buf);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return storage_errno(errno, "cannot open directory", dir, err);
    int rc = 0;
    if (fsync(fd) < 0 && errno != EINVAL)
        rc = storage_errno(errno, "cannot sync directory", dir, err);
    close(fd);
    return rc;
}

int storage_sync_file(const char *path, vr_err *err)
{
    /* the file was just renamed there, but whoever writes the directory
     * may have swapped in a FIFO (whose open would wait for good) or a link */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return storage_errno(errno, "cannot open", path, err);
    int rc = 0;
    struct stat st;
    if (fstat(fd, &st) < 0)
        rc = storage_errno(errno, "cannot stat", path, err);
    else if (!S_ISREG(st.st_mode))
        rc = vr_err_set(err, VR_EFORMAT, "%s: not a regular file (%s)", path,
                        storage_kind(st.st_mode));
    else if (fsync(fd) < 0)
        rc = storage_errno(errno, "cannot sync", path, err);
    close(fd);
    return rc < 0 ? rc : storage_sync_dir_of(path, err);
}

/* ---- atomic files: the one place a file is made durable ---- */

int storage_temp(const char *path, char *tmp, size_t n, int *fd_out, vr_err *err)
{
    char dirb[STORAGE_PATH_MAX], baseb[STORAGE_PATH_MAX];
    if (fd_out)
        *fd_out = -1;
    if (strlen(path) >= sizeof dirb)
        return vr_err_set(err, VR_EINVAL, "path too long: %s", path);
    snprintf(dirb, sizeof dirb, "%s", path);
    snprintf(baseb, sizeof baseb, "%s", path);
    const char *dir = dirname(dirb), *base = basename(baseb);
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned r = 0;
        if (getrandom(&r, sizeof r, 0) != sizeof r)
            r = (unsigned)rand();
        /* with an owner (storage_temp_owner_set) its name ends the temp's:
         * the sweeps ask Redis whether that owner's lease lives */
        const char *owner = storage_temp_owner();
        int w = snprintf(tmp, n, "%s/.%s" STORAGE_TEMP_MARK "%d-%08x%s%s", dir, base,
                         (int)getpid(), r, owner[0] ? "@" : "", owner);
        if (owner[0] && strlen(tmp) - strlen(dir) - 1 > NAME_MAX)
            w = snprintf(tmp, n, "%s/.%s" STORAGE_TEMP_MARK "%d-%08x", dir, base,
                         (int)getpid(), r); /* too long a name: owned by no one, kept */
        if (w < 0 || (size_t)w >= n)
            return vr_err_set(err, VR_EINVAL, "path too long: %s", path);
        /* O_EXCL | O_NOFOLLOW: a file or link planted at the name is never
         * written through; a fresh random name is tried instead */
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0) { /* named by the file asked for: the temp name means nothing to a user */
            int en = errno;
            struct stat st;
            if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
                return vr_err_set(err, VR_ENOENT, "cannot write %s: its directory %s does not "
                                  "exist", path, dir);
            return storage_errno(en, "cannot write", path, err);
        }
        if (fd_out)
            *fd_out = fd;
        else
            close(fd);
        return 0;
    }
    return vr_err_set(err, VR_EIO, "cannot create a temporary file beside %s", path);
}

/* 1 when the regular files tmp and path hold the same bytes (path not
 * followed, not waited on), else 0. */
static int storage_same_bytes(const char *tmp, const char *path)
{
    int a = open(tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int b = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat sa, sb;
    int same = a >= 0 && b >= 0 && fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
               S_ISREG(sb.st_mode) && sa.st_size == sb.st_size;
    /* the buffers are this call's own: the loop and the stitch thread may
     * both publish (static ones were shared between them) */
    enum { BUF = 65536 };
    char *x = same ? malloc(2 * BUF) : NULL, *y = x ? x + BUF : NULL;
    same = same && x;
    for (ssize_t k; same && (k = read(a, x, BUF)) != 0;)
        same = k > 0 && read(b, y, (size_t)k) == k && !memcmp(x, y, (size_t)k);
    free(x);
    if (a >= 0)
        close(a);
    if (b >= 0)
        close(b);
    return same;
}

/* rename(tmp, path) that never replaces: renameat2's RENAME_NOREPLACE, or
 * link + unlink where the file system lacks it; -errno. */
static int storage_rename_noreplace(const char *tmp, const char *path)
{
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    if (link(tmp, path) < 0)
        return -errno;
    unlink(tmp);
    return 0;
}

int storage_commit(const char *tmp, const char *path, vr_err *err)
{
    return storage_commit_as(tmp, path, NULL, err);
}

int storage_commit_as(const char *tmp, const char *path, const struct storage_publish *pub,
                      vr_err *err)
{
    int fd = open(tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int rc = fd < 0 ? storage_errno(errno, "cannot open", tmp, err) : 0;
    unsigned most = pub && pub->mode ? pub->mode & 0777 : 0777;
    if (rc == 0 && pub && pub->uid >= 0 && fchown(fd, (uid_t)pub->uid, (gid_t)pub->gid) < 0)
        rc = storage_errno(errno, "cannot give the output's owner to", path, err);
    if (rc == 0 && pub && fchmod(fd, (pub->mode ? pub->mode : 0644) & 0777) < 0)
        rc = storage_errno(errno, "cannot set the mode of", path, err);
    if (rc == 0 && fsync(fd) < 0)
        rc = storage_errno(errno, "cannot sync", path, err);
    /* only a regular file is replaced (rename would replace a device
     * node or FIFO as root), and it keeps its permission bits */
    struct stat old;
    if (rc == 0 && !(pub && pub->noreplace) && stat(path, &old) == 0) {
        if (!S_ISREG(old.st_mode))
            rc = vr_err_set(err, VR_EINVAL, "%s is %s: an output replaces only a regular file",
                            path, storage_kind(old.st_mode));
        else if (fchmod(fd, old.st_mode & most) < 0)
            rc = storage_errno(errno, "cannot keep the mode of", path, err);
    }
    if (fd >= 0)
        close(fd);
    if (rc == 0 && pub && pub->noreplace) {
        int r = storage_rename_noreplace(tmp, path);
        if (r == -EEXIST && storage_same_bytes(tmp, path))
            r = 0; /* its own earlier publish (a stitch resumed after it): kept */
        if (r == -EEXIST)
            rc = vr_err_set(err, VR_EINVAL, "%s exists and the job may not replace it (a file "
                            "put there after the job was taken)", path);
        else if (r < 0)
            rc = storage_errno(-r, "cannot rename into", path, err);
    } else if (rc == 0 && rename(tmp, path) < 0)
        rc = storage_errno(errno, "cannot rename into", path, err);
    if (rc < 0 || (pub && pub->noreplace)) /* noreplace: tmp is gone, or kept a twin */
        unlink(tmp);
    if (rc < 0)
        return rc;
    return storage_sync_dir_of(path, err);
}

void storage_abort(const char *tmp)
{
    if (tmp && tmp[0])
        unlink(tmp);
}

int storage_write_atomic(const char *path, const void *data, size_t len, vr_err *err)
{
    char tmp[STORAGE_PATH_MAX];
    int fd, rc = storage_temp(path, tmp, sizeof tmp, &fd, err);
    if (rc < 0)
        return rc;
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t k = write(fd, p, left);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            rc = storage_errno(errno, "cannot write", path, err);
            break;
        }
        p += k;
        left -= (size_t)k;
    }
    if (close(fd) < 0 && rc == 0)
        rc = storage_errno(errno, "cannot close", path, err);
    if (rc < 0) {
        storage_abort(tmp);
        return rc;
    }
    return storage_commit(tmp, path, err);
}

/* ---- reading ---- */

const char *storage_kind(unsigned m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device"
           : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a plain file";
}

int storage_open_regular(const char *path, vr_err *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return storage_errno(errno, "cannot open", path, err);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return storage_errno(e, "cannot stat", path, err);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return vr_err_set(err, VR_EFORMAT, "%s: not a regular file (%s)", path,
                          storage_kind(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return storage_errno(e, "cannot open", path, err);
    }
    return fd;
}

int storage_check_regular(const char *path, vr_err *err)
{
    int fd = storage_open_regular(path, err);
    if (fd < 0)
        return fd;
    close(fd);
    return 0;
}

int storage_read_secret(const char *path, char *buf, size_t n, vr_err *err)
{
    if (n)
        buf[0] = '\0';
    /* a regular file only, opened without waiting (a FIFO hung the reader) */
    int fd = storage_open_regular(path, err);
    if (fd < 0) { /* the reason stays; the code says "fix the file", not "retry" */
        if (err)
            err->code = VR_EINVAL;
        return VR_EINVAL;
    }
    struct stat st;
    const char *loose = getenv("VR_ALLOW_LOOSE_SECRET");
    if (fstat(fd, &st) == 0 && (st.st_mode & 077)) {
        if (!loose || strcmp(loose, "1")) {
            close(fd);
            return vr_err_set(err, VR_EINVAL, "%s: others may read it (mode %04o): chmod 600 it, "
                              "or pass --allow-loose-secret", path, (unsigned)(st.st_mode & 07777));
        }
        log_warn("%s can be read by others (mode %04o; --allow-loose-secret)", path,
                 (unsigned)(st.st_mode & 07777));
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        int e = errno;
        close(fd);
        return vr_err_set(err, VR_EINVAL, "%s: %s", path, strerror(e));
    }
    char line[4096 + 2];
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    size_t len = ok ? strcspn(line, "\r\n") : 0;
    int whole = ok && (line[len] != '\0' || strlen(line) < sizeof line - 1);
    int rc = (int)len;
    if (!len)
        rc = vr_err_set(err, VR_EINVAL, "%s: empty (want it on its first line)", path);
    else if (!whole || len >= n)
        rc = vr_err_set(err, VR_EINVAL, "%s: longer than %zu bytes", path,
                        (n < sizeof line - 1 ? n : sizeof line - 1) - 1);
    else
        memcpy(buf, line, len);
    if (n)
        buf[rc > 0 ? len : 0] = '\0';
    explicit_bzero(line, sizeof line);
    return rc;
}

int storage_read_file(const char *path, size_t max, char **out, size_t *len, vr_err *err)
{
    *out = NULL;
    int fd = storage_open_regular(path, err);
    if (fd < 0)
        return fd;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return storage_errno(e, "cannot open", path, err);
    }
    char *buf = malloc(max + 1);
    if (!buf) {
        fclose(f);
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    }
    size_t got = fread(buf, 1, max + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return vr_err_set(err, VR_EIO, "cannot read %s", path);
    }
    if (got > max) {
        free(buf);
        return vr_err_set(err, VR_EFORMAT, "%s is larger than the %zu-byte limit", path, max);
    }
    buf[got] = '\0';
    *out = buf;
    if (len)
        *len = got;
    return 0;
}

int storage_check_space(const char *dir, uint64_t need, vr_err *err)
{
    struct statvfs sv;
    if (statvfs(dir, &sv) < 0)
        return storage_errno(errno, "cannot stat file system of", dir, err);
    uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
    if (avail < need)
        return vr_err_set(err, VR_ENOSPC, "%s: %llu MiB free, %llu MiB needed: " STORAGE_DISK_FULL,
                          dir, (unsigned long long)(avail >> 20),
                          (unsigned long long)(need >> 20));
    return 0;
}

static int storage_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(p) < 0 && errno != ENOENT ? -1 : 0;
}

int storage_rmtree(const char *dir)
{
    return nftw(dir, storage_rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 ? VR_EIO : 0;
}

