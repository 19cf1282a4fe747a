/*
 * run_workdir.c - where `vrctl run` keeps a job so that it can be resumed,
 * as av1an does: a work directory that records the digest of the job's
 * options (input, output, profile, overrides...: the spec without its id
 * and time), so the same command finds it again. Its name is mkdtemp's, in
 * $XDG_RUNTIME_DIR when that is a private directory of ours, else in
 * $TMPDIR or /tmp: a name made of the digest could be guessed and
 * pre-created by another user, failing the run (issue 41, finding 10). It holds the private Redis (with its AOF:
 * every chunk committed survives Ctrl-C and kill -9), the chunk outputs
 * and the job's id. `--resume` carries on from it; without --resume a
 * leftover one is removed and the job starts afresh. A lock keeps two runs
 * of the same job apart.
 */
#include "run_workdir.h"

#include "job.h"
#include "rq_fleet.h"
#include "storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN_JOB_FILE "job"       /* the job's id, in the work dir */
#define RUN_DIGEST_FILE "digest" /* the digest of the job's options, in the work dir */
#define RUN_DIGEST_HEX 65        /* SHA-256 in hex, with its NUL */

/* Usable as a per-user base: an absolute path of at most 48 bytes (the
 * Redis socket's path in it fits its 108) naming a real directory of ours
 * that no one else may enter. */
static int run_base_private(const char *dir)
{
    struct stat st;
    return dir && dir[0] == '/' && strlen(dir) <= 48 && lstat(dir, &st) == 0 &&
           S_ISDIR(st.st_mode) && st.st_uid == getuid() && !(st.st_mode & 077);
}

const char *run_workdir_base(void)
{
    const char *x = getenv("XDG_RUNTIME_DIR");
    if (run_base_private(x))
        return x;
    const char *t = getenv("TMPDIR");
    return t && t[0] == '/' && strlen(t) <= 48 ? t : "/tmp";
}

/* The digest of the job's options: the spec less its id and time, so
 * every run of the same command has the same one. */
static int workdir_digest(const struct job_spec *js, char hex[RUN_DIGEST_HEX], vr_err *err)
{
    struct job_spec k = *js;
    snprintf(k.id, sizeof k.id, "x");
    k.created_ms = 0;
    char *json = NULL;
    int rc = job_spec_to_json(&k, &json, err);
    if (rc < 0)
        return rc;
    unsigned char d[EVP_MAX_MD_SIZE] = { 0 };
    unsigned len = 0;
    int ok = EVP_Digest(json, strlen(json), d, &len, EVP_sha256(), NULL) == 1 && len == 32;
    free(json);
    if (!ok)
        return vr_err_set(err, VR_EIO, "cannot name the work dir (libcrypto's SHA-256 failed)");
    for (unsigned i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return 0;
}

/* An existing work dir is ours: a real directory (no link), owned by us,
 * closed to others. */
static int workdir_ours(const char *dir)
{
    struct stat st;
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
           !(st.st_mode & 077);
}

/* The work dir of ours in the base whose recorded digest is `hex`, into
 * dir; 1 found, 0 none. The name says nothing (mkdtemp's): another user
 * can neither guess it nor squat it, and a directory of theirs, or one
 * not closed to others, is never taken for ours whatever its name. */
static int workdir_find(const char *hex, char *dir, size_t n)
{
    const char *base = run_workdir_base();
    DIR *d = opendir(base);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        if (strncmp(de->d_name, RUN_WORKDIR_NAME, strlen(RUN_WORKDIR_NAME)))
            continue;
        char cand[RUN_WORKDIR_MAX + 300], path[RUN_WORKDIR_MAX + 320], *text = NULL;
        snprintf(cand, sizeof cand, "%s/%s", base, de->d_name);
        snprintf(path, sizeof path, "%s/" RUN_DIGEST_FILE, cand);
        if (strlen(cand) < n && workdir_ours(cand) &&
            storage_read_file(path, RUN_DIGEST_HEX, &text, NULL, NULL) == 0)
            found = !strncmp(text, hex, RUN_DIGEST_HEX - 1);
        if (found)
            memcpy(dir, cand, strlen(cand) + 1);
        free(text);
    }
    closedir(d);
    return found;
}

/* A new work dir (mkdtemp: 0700, a name nobody chose) with the digest
 * recorded inside. */
static int workdir_make(const char *hex, char *dir, size_t n, vr_err *err)
{
    snprintf(dir, n, "%s/" RUN_WORKDIR_NAME "XXXXXX", run_workdir_base());
    if (!mkdtemp(dir))
        return vr_err_set(err, VR_EIO, "cannot create a work dir in %s: %s", run_workdir_base(),
                          strerror(errno));
    char path[RUN_WORKDIR_MAX + 16];
    snprintf(path, sizeof path, "%s/" RUN_DIGEST_FILE, dir);
    int rc = storage_write_atomic(path, hex, strlen(hex), err);
    if (rc < 0)
        rmdir(dir);
    return rc;
}

/* The newest mtime (ms) of the AOF files in dir/appendonlydir (Redis 7):
 * the last moment the stopped run worked; 0 when none is there. */
static long long run_aof_written_ms(const char *dir)
{
    char aof[RUN_WORKDIR_MAX + 32], f[RUN_WORKDIR_MAX + 300];
    snprintf(aof, sizeof aof, "%s/appendonlydir", dir);
    DIR *d = opendir(aof);
    long long newest = 0;
    struct dirent *de;
    struct stat sb;
    while (d && (de = readdir(d))) {
        snprintf(f, sizeof f, "%s/%s", aof, de->d_name);
        if (de->d_name[0] != '.' && stat(f, &sb) == 0 && S_ISREG(sb.st_mode)) {
            long long ms = sb.st_mtim.tv_sec * 1000LL + sb.st_mtim.tv_nsec / 1000000;
            newest = ms > newest ? ms : newest;
        }
    }
    if (d)
        closedir(d);
    return newest;
}

int run_workdir_open(const struct job_spec *js, int resume, struct run_workdir *w, vr_err *err)
{
    memset(w, 0, sizeof *w);
    w->lock_fd = -1;
    char hex[RUN_DIGEST_HEX];
    int rc = workdir_digest(js, hex, err);
    if (rc < 0)
        return rc;
    if (!workdir_find(hex, w->dir, sizeof w->dir) &&
        (rc = workdir_make(hex, w->dir, sizeof w->dir, err)) < 0)
        return rc;
    char lock[RUN_WORKDIR_MAX + 16];
    snprintf(lock, sizeof lock, "%s/lock", w->dir);
    w->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (w->lock_fd < 0 || flock(w->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        rc = vr_err_set(err, VR_EINVAL, "another vrctl run of the same job holds %s", w->dir);
        run_workdir_close(w, 1);
        return rc;
    }
    char path[RUN_WORKDIR_MAX + 16], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/" RUN_JOB_FILE, w->dir);
    if (storage_read_file(path, JOB_ID_MAX, &text, &len, NULL) == 0 && len > 0) {
        snprintf(w->job, sizeof w->job, "%.*s", (int)len, text);
        w->job[strcspn(w->job, "\n")] = '\0';
        if (!job_id_valid(w->job))
            w->job[0] = '\0';
    }
    free(text);
    if (resume && w->job[0]) {
        w->resuming = 1;
        w->stopped_ms = run_aof_written_ms(w->dir);
        return 0;
    }
    /* afresh: whatever an earlier run left goes (the lock file and the
     * digest stay) */
    w->job[0] = '\0';
    DIR *d = opendir(w->dir);
    if (!d)
        return vr_err_set(err, VR_EIO, "cannot empty %s: %s", w->dir, strerror(errno));
    int bad = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
            !strcmp(de->d_name, "lock") || !strcmp(de->d_name, RUN_DIGEST_FILE))
            continue;
        char sub[RUN_WORKDIR_MAX + 300];
        snprintf(sub, sizeof sub, "%s/%s", w->dir, de->d_name);
        bad |= storage_rmtree(sub) < 0;
    }
    closedir(d);
    return bad ? vr_err_set(err, VR_EIO, "cannot empty %s", w->dir) : 0;
}

int run_workdir_save_job(struct run_workdir *w, const char *id, vr_err *err)
{
    char path[RUN_WORKDIR_MAX + 16];
    snprintf(path, sizeof path, "%s/" RUN_JOB_FILE, w->dir);
    snprintf(w->job, sizeof w->job, "%s", id);
    return storage_write_atomic(path, id, strlen(id), err);
}

void run_workdir_close(struct run_workdir *w, int keep)
{
    char prefix[80];
    snprintf(prefix, sizeof prefix, "%s/" RUN_WORKDIR_NAME, run_workdir_base());
    if (!keep && w->dir[0] && !strncmp(w->dir, prefix, strlen(prefix)) &&
        storage_rmtree(w->dir) < 0)
        fprintf(stderr, "vrctl run: could not remove %s\n", w->dir);
    if (w->lock_fd >= 0)
        close(w->lock_fd);
    w->lock_fd = -1;
}

int run_release_dead(struct rq *q, vr_err *err)
{
    static const char *const streams[] = { RQ_CHUNKS_HI, RQ_CHUNKS };
    int released = 0;
    for (int s = 0; s < 2; s++) {
        struct rq_pending p[64];
        int n = rq_pending_idle(q, streams[s], 0, p, 64, err);
        if (n < 0)
            return n;
        for (int i = 0; i < n; i++) {
            int rc = rq_worker_died(q, p[i].owner, NULL, "its vrctl run was stopped", err);
            if (rc < 0)
                return rc;
            released += rc;
        }
    }
    return released;
}
