/*
 * submit_batch.h - `vrctl submit DIR|GLOB|FILE... -o OUTDIR`: the inputs of
 * a batch and their outputs' names, one job a video (issue 45, "what users
 * ask for next").
 */
#ifndef VR_SUBMIT_BATCH_H
#define VR_SUBMIT_BATCH_H

#include "job.h"

struct batch_item {
    char in[JOB_PATH_MAX];      /* a video file */
    char out[JOB_PATH_MAX];     /* OUTDIR/<its name less extension>.<kind>.mkv */
};

/* Whether args (n of them) make a batch: several inputs, a directory, or a
 * pattern the shell left alone (*, ? or [ in a name that does not exist). */
int batch_wanted(char **args, int n);

/* Expands args into the video files they name, in name order: a directory's
 * regular files (not its subdirectories, nor hidden ones), a pattern's
 * matches (glob(3)), a file as itself. Each that is no video (does not
 * probe as one, or is a still image: vr-worker segment-image takes those)
 * is refused with a line on stderr saying why, and so is a second input
 * whose output name an earlier one has. `outdir` must be a directory; the
 * output kind (mask, alpha, greenscreen) names the outputs. Returns the
 * count in *items (caller frees; may be 0) with the refused counted in
 * *refused, or -1 after a usage error was printed (outdir no directory,
 * a pattern that matches nothing, out of memory). */
int batch_expand(char **args, int n, const char *outdir, const char *kind,
                 struct batch_item **items, int *refused);

#endif
