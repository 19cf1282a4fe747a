/*
 * beneath.h - paths held beneath a root directory.
 *
 * The controller and the workers often run as root, and the paths they
 * touch come from job specs and chunk tasks in Redis: whoever can submit a
 * job or write Redis chooses them. So a path from there is (1) checked by
 * name to lie under a root the daemon was configured with, then (2) opened
 * from that root's directory descriptor one component at a time, never
 * following a symbolic link and never leaving the root (openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the kernel has it, the same
 * walk by hand with openat(O_NOFOLLOW) where it does not). A link planted
 * anywhere in the path, or swapped in between the check and the open, makes
 * the open fail with ELOOP / ENOTDIR instead of writing through it.
 *
 * libav opens files by name. A descriptor opened here is handed to it as
 * "/proc/self/fd/N" (or "/proc/self/fd/N/name" for a directory): the kernel
 * resolves that magic link to the very file or directory already opened,
 * so no name is looked up again by a path someone else controls.
 */
#ifndef VR_BENEATH_H
#define VR_BENEATH_H

#include "vr_err.h"

#include <stddef.h>
#include <sys/types.h>

/* "/proc/self/fd/<int>/" plus a file name fits in this with room to spare. */
#define BENEATH_FD_PATH_MAX 320

/* The part of the absolute path `path` under the absolute, resolved
 * directory `root`, into rel (n bytes): "." and empty components are
 * dropped, "" means the root itself. VR_EINVAL for a relative path or a
 * ".." component (however it would resolve), VR_ENOENT (a distinct code:
 * "outside") when path does not lie under root. Names only; nothing is
 * opened. */
int beneath_rel(const char *root, const char *path, char *rel, size_t n);

/* Opens rel (relative; "" or "." is dirfd itself) beneath the directory
 * dirfd with open(2)'s flags and mode (O_CLOEXEC added): no symbolic link is
 * followed, the final component included, and no ".." is accepted. Returns
 * the new descriptor (the caller closes it) or a negative errno (ELOOP: a
 * link in the path, EXDEV: ".."). */
int beneath_open(int dirfd, const char *rel, int flags, mode_t mode);

/* The same walk by hand (openat with O_NOFOLLOW, component by component),
 * which beneath_open uses when openat2 is missing (ENOSYS). Public so the
 * tests can run it on kernels that have openat2. */
int beneath_open_walk(int dirfd, const char *rel, int flags, mode_t mode);

/* Opens rel beneath dirfd for reading only when it is a regular file: a
 * file on the storage, which a worker's user (or anyone who can write
 * there) may have made a FIFO, a device or a huge sparse file. The open
 * does not wait (O_NONBLOCK: a FIFO's open would block until a writer
 * came), follows no link (O_NOFOLLOW as well as beneath_open's walk), and
 * fstat must say regular; O_NONBLOCK is cleared on the descriptor
 * returned, its size in *size (may be NULL). Returns the descriptor or a
 * VR_E* code with err saying "<what> <shown>: ..." (beneath_err's words,
 * or VR_EFORMAT "not a regular file (a FIFO)"). */
int beneath_open_file(int dirfd, const char *rel, const char *what, const char *shown,
                      const char *root, long long *size, vr_err *err);

/* mkdir -p of rel beneath dirfd (mode for the directories it creates),
 * refusing links the same way; returns the last directory opened
 * O_RDONLY | O_DIRECTORY (the caller closes it) or a negative errno. */
int beneath_mkdirs(int dirfd, const char *rel, mode_t mode);

/* "/proc/self/fd/<fd>" and "/proc/self/fd/<fd>/<name>" (name may be NULL):
 * the name libav is given for a descriptor opened here. */
void beneath_fd_path(int fd, const char *name, char *out, size_t n);

/* The one wording of a failed open beneath a root, from its errno:
 * "<what> <shown>: <reason>" where ELOOP/ENOTDIR/EXDEV say that links and
 * ".." are not followed under `root`. Returns a VR_E* code. */
int beneath_err(int e, const char *what, const char *shown, const char *root, vr_err *err);

/* Replaces every "/proc/self/fd/<fd>" in err's message with `real` (the
 * path the user gave), so a failure reads with the user's names. */
void beneath_unmask(vr_err *err, int fd, const char *real);

#endif
