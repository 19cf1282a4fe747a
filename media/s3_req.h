/*
 * s3_req.h - one signed request to an S3 store (s3://bucket/key, mapped and
 * signed by http_s3.h), retried as a read is: 5xx, 429, 408, resets and
 * timeouts with http_io's doubling back-off. The pieces of an upload
 * (media/s3_put.h) are made of these.
 *
 * The body, when there is one, is held in memory and its SHA-256 is signed
 * (x-amz-content-sha256), so the store checks what it got. Every address
 * connected to passes the address rule unless --storage-allow-private; a
 * redirect is never followed (a signed write goes where it was told).
 * Messages name the object as s3://bucket/key and the operation, with the
 * HTTP status and the store's error code; never a credential.
 */
#ifndef VR_S3_REQ_H
#define VR_S3_REQ_H

#include "vr_err.h"

#include <stddef.h>

#define S3_REQ_REPLY_MAX 16384 /* a reply's body kept (XML), its NUL included */

struct s3_reply {
    long status;                  /* the HTTP status (0: none came) */
    char etag[128];               /* its ETag header, quotes kept */
    char body[S3_REQ_REPLY_MAX];  /* its body, cut at S3_REQ_REPLY_MAX - 1 */
    int reached;                  /* a server answered some try */
};

/* One request: method ("PUT", "POST", "HEAD", "DELETE") on s3url with query
 * (already canonical: names sorted, values percent-encoded; "" none),
 * body (len bytes, borrowed for the call; NULL none) and one extra header
 * (NULL none). op names the operation in messages ("UploadPart 3").
 * Returns 0 with *r filled whatever the status (the caller judges it), or
 * VR_E* when no answer came after the tries. */
int s3_req(const char *s3url, const char *method, const char *query, const void *body,
           size_t len, const char *header, const char *op, struct s3_reply *r, vr_err *err);

/* The store's <Code> from an error reply's body into code ("" none). */
void s3_reply_code(const struct s3_reply *r, char *code, size_t n);

/* err set for a reply that is not what op wanted: the object, op, the
 * HTTP status and the store's code. Returns the VR_E* it set. */
int s3_reply_err(const char *s3url, const char *op, const struct s3_reply *r, vr_err *err);

#endif
