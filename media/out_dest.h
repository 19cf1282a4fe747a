/*
 * out_dest.h - where `vr-worker process -o` and `vrctl run -o` write: a
 * local path as it is, or a WebDAV or s3:// URL (http_put.h, s3_put.h) by
 * way of a local file in a private directory under $TMPDIR (/tmp by
 * default), uploaded when the run is done and removed after, so the object
 * appears whole or not at all.
 */
#ifndef VR_OUT_DEST_H
#define VR_OUT_DEST_H

#include "vr_err.h"

#include <stddef.h>

struct out_dest {
    const char *out;      /* what -o said */
    int url;              /* out is a URL */
    char dir[512];        /* the private directory (url) */
    char local[1024];     /* where the pipeline writes */
};

#define OUT_DEST_NAME_MAX 201 /* an output URL's file name, its NUL included */

/* The checks of an output URL made before any work (here, and by vrctl
 * submit and the controller for a fleet's): http(s) or s3://,
 * its last segment a plain
 * file name (into base, n bytes: the muxer picks the format from its
 * extension) and, unless replace, no object answering at it (HEAD). 0 or
 * VR_E* saying why. */
int out_dest_url_check(const char *out, int replace, char *base, size_t n, vr_err *err);

/* Sets d up for out. For a URL that may not be replaced, an object
 * already there is refused now, before any work. 0 or VR_E*. */
int out_dest_begin(struct out_dest *d, const char *out, int replace, vr_err *err);

/* After the pipeline wrote d->local: uploads it (a URL) and removes the
 * local copy. 0 or VR_E*. */
int out_dest_commit(struct out_dest *d, int replace, vr_err *err);

/* Removes what d made; safe after commit and twice. */
void out_dest_end(struct out_dest *d);

#endif
