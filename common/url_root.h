/*
 * url_root.h - sources named by URL (http://, https://, s3://) and the
 * roots that allow them: a root given as a URL (vr-controller and
 * vr-worker --input-root https://host/media/) is a prefix, and a job's URL
 * is allowed only under it, as a path is only under a directory root.
 *
 * A URL under a root: the root's bytes exactly, then a path (the root
 * ends at a '/'); no ".." or "." segment, no encoded dot or slash (%2e,
 * %2f: a server may decode them into a step out), no backslash, no user
 * info (credentials never travel in a job), no fragment, nothing outside
 * printable ASCII. A query string is kept (a presigned URL's).
 */
#ifndef VR_URL_ROOT_H
#define VR_URL_ROOT_H

#include "vr_err.h"

#include <stddef.h>

#define URL_ROOT_MAX 1024

/* 1 when s names an object of a store (http://, https://, s3://); accepts
 * NULL. */
int url_root_is_url(const char *s);

/* Checks that root may be a root (a URL with a host, no user info, query
 * or fragment) and copies it to out with a '/' at its end. 0 or VR_EINVAL. */
int url_root_norm(const char *root, char *out, size_t n, vr_err *err);

/* 0 when url is printable ASCII without user info or fragment (what
 * url_root_check asks first), else VR_EINVAL saying why. */
int url_root_plain(const char *url, vr_err *err);

/* 0 when url lies under root (url_root_norm'd; "" allows none), else
 * VR_EINVAL saying why and naming `opt`, the option that sets the root
 * (the message says "output" when opt names an --output-root). */
int url_root_check(const char *url, const char *root, const char *opt, vr_err *err);

#endif
