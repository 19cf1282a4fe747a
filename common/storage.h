/*
 * storage.h - the storage root every node mounts: paths relative to it,
 * durable writes (temp name + fsync + rename + fsync of the directory) and
 * disk-full handling. Tasks in Redis carry paths relative to the root, so
 * nodes may mount it at different places.
 */
#ifndef VR_STORAGE_H
#define VR_STORAGE_H

#include "vr_err.h"

#include <stddef.h>
#include <stdint.h>

#define STORAGE_PATH_MAX 4096

/* Joins root and a relative path into out. Refuses absolute paths, "..",
 * empty names and overlong results (VR_EINVAL): a task from Redis must not
 * point outside the root. */
int storage_path(const char *root, const char *rel, char *out, size_t n, vr_err *err);

/* mkdir -p (mode 0755); existing directories are fine. */
int storage_mkdirs(const char *dir, vr_err *err);

/* fsync()s the file, then its directory, so a rename into it is durable.
 * A regular file only, opened without waiting or following a link
 * (VR_EFORMAT "not a regular file (a FIFO)"). */
int storage_sync_file(const char *path, vr_err *err);

/* ---- checksums of stored files ----
 *
 * A chunk's output is summed by its worker once it is durable, the sum
 * recorded with its commit, and summed again when the stitch takes it: a
 * file damaged or truncated on the storage in between (a bit flip, a
 * half-written copy) is computed again instead of stitched (issue 26,
 * finding 7). "sha256:<64 hex>" over the files' bytes in order. */
#define STORAGE_SUM_LEN (7 + 64 + 1)

/* The sum of the n open files fds (read from offset 0 with pread, the
 * offsets left alone) into out (STORAGE_SUM_LEN bytes). VR_EIO on a read
 * error. */
int storage_sum_fds(const int *fds, int n, char out[STORAGE_SUM_LEN], vr_err *err);

/* ---- atomic files: the one place a file is made durable ----
 *
 * A file appears whole or not at all: it is written under a temporary name
 * beside its final one, fsync'd, renamed, and the directory fsync'd. Every
 * writer in the product goes through here (check-rooms enforces it), so
 * durability does not depend on which code wrote the file. Temporary
 * names are "<dir>/.<name>.tmp-<pid>-<8 hex>[@<owner>]": hidden, random (nobody can
 * plant a link at the name in advance) and recognisable, so a crash's
 * leftovers can be found by STORAGE_TEMP_MARK. */
#define STORAGE_TEMP_MARK ".tmp-"

/* Creates a new, empty temporary file beside `path` (O_EXCL | O_NOFOLLOW,
 * mode 0644) and puts its name in tmp (n bytes). With fd_out the open
 * descriptor is handed over (the caller closes it), else it is closed and
 * other code (libav, a JSON dumper) opens the file by name. */
int storage_temp(const char *path, char *tmp, size_t n, int *fd_out, vr_err *err);

/* Makes the finished temporary file `tmp` the file `path`: fsync, rename,
 * fsync of the directory. An existing `path` must be a regular file (a
 * device, FIFO or directory there is refused, VR_EINVAL), and tmp takes its
 * permission bits, so a 0600 file stays 0600. On failure tmp is removed and
 * path unchanged; a full disk gives VR_ENOSPC naming the path. */
int storage_commit(const char *tmp, const char *path, vr_err *err);

/* How storage_commit_as publishes (issue 41, finding 3: a job's output is
 * made as its submitter's, and `-n` holds at the rename itself). */
struct storage_publish {
    int noreplace;      /* never replace a file at the name: an atomic
                         * rename-noreplace; a file there of the same bytes
                         * (this output, published before a restart) is kept
                         * and counts as published, any other is VR_EINVAL */
    unsigned mode;      /* permission bits at most (0: 0644): a new file gets
                         * them, a replaced file keeps its own within them */
    long long uid, gid; /* the file's owner (-1: left as made) */
};

/* storage_commit under pub (NULL: storage_commit). */
int storage_commit_as(const char *tmp, const char *path, const struct storage_publish *pub,
                      vr_err *err);

/* ---- outputs: what a command may replace (storage_out.c) ----
 *
 * Every user-named output (process -o / --metrics / --trace, vrctl run and
 * submit -o, report -o) is checked before any work: it replaces only a
 * regular file the user may write, only with -y, and never an input of the
 * same command or another of its outputs, compared by device and inode (a
 * hard link, a symlink or m/../m/./x is the same file). */

/* A file and the option that named it ("-o", "--metrics", "the input"),
 * for messages. A NULL path is skipped. */
struct storage_file {
    const char *what;
    const char *path;
};

/* 0 when `path` is absent, or is a regular file (a link judged by its
 * target) that may_replace allows and the caller may write; else VR_EINVAL
 * saying why: "is a character device: an output replaces only a regular
 * file", "exists (-y replaces it)", "is not writable by you". */
int storage_output_check(const char *path, int may_replace, vr_err *err);

/* 0 when no output is an existing input or an earlier output: the same
 * device and inode, or for files not yet there the same resolved name.
 * VR_EINVAL names both files and their options. */
int storage_outputs_distinct(const struct storage_file *in, int nin,
                             const struct storage_file *out, int nout, vr_err *err);

/* storage_outputs_distinct, then storage_output_check on each output. */
int storage_outputs_check(const struct storage_file *in, int nin,
                          const struct storage_file *out, int nout, int may_replace,
                          vr_err *err);

/* "a FIFO", "a directory", "a character device"...: what a non-regular
 * file is, for messages. */
const char *storage_kind(unsigned mode);

/* Removes an unfinished temporary file; accepts "" and NULL. */
void storage_abort(const char *tmp);

/* Writes len bytes to path durably and atomically (storage_temp, write,
 * storage_commit). */
int storage_write_atomic(const char *path, const void *data, size_t len, vr_err *err);

/* Opens `path` for reading only when it is a regular file: the open is
 * non-blocking (a FIFO with no writer would block open() for ever, and a
 * signal does not end that wait), then fstat decides and O_NONBLOCK is
 * cleared again. Returns the descriptor (O_CLOEXEC; the caller closes it),
 * or VR_ENOENT, VR_EFORMAT ("not a regular file (a FIFO)") or VR_EIO, the
 * message naming `path`. */
int storage_open_regular(const char *path, vr_err *err);

/* 0 when `path` is a regular file that can be opened for reading, else
 * storage_open_regular's error. What a caller checks before it lets a
 * library (libav) open the file by name. */
int storage_check_regular(const char *path, vr_err *err);

/* Reads a whole regular file of at most max bytes into a malloc'd,
 * NUL-terminated buffer (*out, free()). Larger files are VR_EFORMAT; a
 * FIFO, device or directory is refused (storage_open_regular). */
int storage_read_file(const char *path, size_t max, char **out, size_t *len, vr_err *err);

/* A secret kept out of argv (a Redis password, a webhook signing key): the
 * first line of `path` without its line end, into buf (n bytes, NUL-
 * terminated). `path` must be a regular file (opened without waiting: a
 * FIFO is refused at once) that only its owner may read; with
 * VR_ALLOW_LOOSE_SECRET=1 (--allow-loose-secret) a looser one is read with
 * a warning. Returns its length, or
 * VR_EINVAL with the reason after "path: " ("empty (want it on its first
 * line)", "longer than N bytes", the open error); the secret is never in a
 * message, and the read buffer is wiped. */
int storage_read_secret(const char *path, char *buf, size_t n, vr_err *err);

/* VR_ENOSPC with a message when the file system holding `dir` has fewer
 * than `need` bytes available for unprivileged users. */
int storage_check_space(const char *dir, uint64_t need, vr_err *err);

/* ---- temporaries owned (storage_temps.c) ----
 *
 * A fleet process (a controller, a worker) names itself the owner of its
 * temporary files: "<name>@<owner>" ends each temp name, the owner being
 * "c:<controller name>" or "w:<worker name>", whose heartbeat key in Redis
 * is its lease. A sweep removes a temp only when its owner's lease has
 * lapsed by Redis's clock (the caller's `live` says, from Redis); never by
 * a local pid or a local clock, which mean nothing on another host or
 * with a skewed clock (issue 42, finding 3). A temp without an owner (a
 * standalone `vr-worker process`, a name too long to carry it) is never
 * swept: its writer cleans up, or the job's directory goes with the job. */

#define STORAGE_OWNER_MAX 112 /* an owner tag's bytes, its NUL included */

/* Sets this process's owner tag: 1..110 of [A-Za-z0-9:._-]. 0 or VR_EINVAL. */
int storage_temp_owner_set(const char *owner);

/* Whether `o` is a valid owner tag (the set rule above): 1 or 0. */
int storage_temp_owner_valid(const char *o);

/* Sets the calling thread's owner tag, which wins over the process's (a
 * worker of several in one process: `serve --slot-mode threads`). 0 or
 * VR_EINVAL. */
int storage_temp_owner_set_thread(const char *owner);

/* The calling thread's owner tag, else this process's; "" when none. */
const char *storage_temp_owner(void);

/* Whether an owner's lease lives: 1 yes, 0 lapsed, <0 cannot tell (Redis
 * away: the temp is kept). */
typedef int (*storage_owner_live_fn)(void *ctx, const char *owner);

/* Removes the temporary files under `dir` (STORAGE_SWEEP_DEPTH levels
 * deep, links not followed) whose owner's lease has lapsed (live says 0).
 * Each removal is logged; *removed (may be NULL) gets the count. A missing
 * dir is no error. Returns 0, or <0 when dir cannot be opened. */
#define STORAGE_SWEEP_DEPTH 8
int storage_sweep_temps(const char *dir, storage_owner_live_fn live, void *ctx,
                        long long *removed, vr_err *err);

/* Removes the temporary files of `base` (storage_temp's names for it) in
 * the directory open at dirfd, but those this process writes: for a writer
 * that holds the file's only right to be written (the controller that
 * claimed a job's stitch), every other such file was left by a writer that
 * died or lost that right. Links are not followed. Returns the count. */
long long storage_drop_temps_of(int dirfd, const char *base);

/* storage_sweep_temps's rule for the temporary files of `base` alone in
 * the directory open at dirfd (named dir, for the log): a user's output
 * directory, where nothing else is this product's to touch. Links are not
 * followed. Returns the count removed. */
long long storage_sweep_temps_of(int dirfd, const char *dir, const char *base,
                                 storage_owner_live_fn live, void *ctx);

/* Removes a directory tree (best effort); returns 0 or VR_EIO. */
int storage_rmtree(const char *dir);

/* The one wording of a full disk (ENOSPC, EDQUOT, too little free space),
 * the one the docs give: every writer says it the same way, after the path,
 * so it names no volume of its own ("storage volume" misled when the
 * user's output volume was the full one: issue 26, finding 9). */
#define STORAGE_DISK_FULL "disk full (free space on the volume that holds it and retry the job)"

/* Maps an errno from an I/O call to a VR_E* code with text:
 * "<what> <path>: " STORAGE_DISK_FULL for ENOSPC/EDQUOT, strerror otherwise. */
int storage_errno(int e, const char *what, const char *path, vr_err *err);

#endif
