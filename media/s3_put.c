/*
 * s3_put.c - an output written to S3: one PUT, or a multipart upload
 * completed or aborted whole (s3_put.h).
 */
#define _GNU_SOURCE /* pread64 through _FILE_OFFSET_BITS */
#include "s3_put.h"

#include "log.h"
#include "s3_req.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define S3_PART_DEFAULT (16ll << 20)
#define S3_PART_MIN     1024ll          /* tests; AWS itself wants 5 MiB */
#define S3_PART_MAX     (5ll << 30)     /* S3's own limit on a part */
#define S3_PARTS_MAX    10000           /* S3's own limit on an upload's parts */
#define S3_IF_NEW       "If-None-Match: *"

/* ---- the part size ---- */

/* $VR_S3_PART_SIZE, checked, grown so size fits in S3_PARTS_MAX parts. */
static int s3_part_size(int64_t size, int64_t *part, vr_err *err)
{
    const char *e = getenv("VR_S3_PART_SIZE");
    char *end = NULL;
    long long v = e && *e ? strtoll(e, &end, 10) : S3_PART_DEFAULT;
    if (e && *e && (*end || v < S3_PART_MIN || v > S3_PART_MAX))
        return vr_err_set(err, VR_EINVAL, "VR_S3_PART_SIZE=%.32s: want bytes, %lld to %lld", e,
                          S3_PART_MIN, S3_PART_MAX);
    if (size > v * S3_PARTS_MAX)
        v = (size + S3_PARTS_MAX - 1) / S3_PARTS_MAX;
    *part = v;
    return 0;
}

/* ---- one PUT ---- */

static int s3_put_once(const char *s3url, const uint8_t *buf, size_t len, int replace,
                       struct s3_reply *r, vr_err *err)
{
    int rc = s3_req(s3url, "PUT", "", buf, len, replace ? NULL : S3_IF_NEW, "PutObject", r, err);
    if (rc == 0 && r->status != 200)
        rc = s3_reply_err(s3url, "PutObject", r, err);
    return rc;
}

/* ---- multipart ---- */

/* An upload in flight: its id (as the store gave it, and percent-encoded
 * for a query) and the ETag of each part sent. */
struct s3_upload {
    char id[1024], qid[3 * 1024 + 1];
    char (*etags)[128];
    int parts;
};

/* s percent-encoded as SigV4's canonical query wants it. -1 if too long. */
static int s3_query_escape(const char *s, char *out, size_t n)
{
    size_t j = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '_' || c == '.' || c == '~';
        if (j + (keep ? 1 : 3) >= n)
            return -1;
        j += keep ? (size_t)(out[j] = (char)c, 1) : (size_t)snprintf(out + j, n - j, "%%%02X", c);
    }
    out[j] = '\0';
    return 0;
}

/* The text between <tag> and </tag> in xml into v; -1 when absent, too
 * long or not printable. */
static int s3_xml_take(const char *xml, const char *tag, char *v, size_t n)
{
    char open[64], close[64];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *s = strstr(xml, open), *e = s ? strstr(s, close) : NULL;
    if (!s || !e)
        return -1;
    s += strlen(open);
    if ((size_t)(e - s) >= n || e == s)
        return -1;
    for (const char *p = s; p < e; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f || *p == '&' || *p == '<')
            return -1;
    snprintf(v, n, "%.*s", (int)(e - s), s);
    return 0;
}

static int s3_create(const char *s3url, struct s3_upload *u, struct s3_reply *r, vr_err *err)
{
    int rc = s3_req(s3url, "POST", "uploads=", NULL, 0, NULL, "CreateMultipartUpload", r, err);
    if (rc == 0 && r->status != 200)
        rc = s3_reply_err(s3url, "CreateMultipartUpload", r, err);
    if (rc == 0 && (s3_xml_take(r->body, "UploadId", u->id, sizeof u->id) < 0 ||
                    s3_query_escape(u->id, u->qid, sizeof u->qid) < 0))
        rc = vr_err_set(err, VR_EFORMAT, "%s: CreateMultipartUpload: HTTP 200 without a "
                        "usable UploadId", s3url);
    return rc;
}

static int s3_part(const char *s3url, struct s3_upload *u, int no, const uint8_t *buf,
                   size_t len, struct s3_reply *r, vr_err *err)
{
    char q[3 * 1024 + 64], op[32];
    snprintf(q, sizeof q, "partNumber=%d&uploadId=%s", no, u->qid);
    snprintf(op, sizeof op, "UploadPart %d", no);
    int rc = s3_req(s3url, "PUT", q, buf, len, NULL, op, r, err);
    if (rc == 0 && r->status != 200)
        rc = s3_reply_err(s3url, op, r, err);
    if (rc == 0 && (!r->etag[0] || strpbrk(r->etag, "&<>")))
        rc = vr_err_set(err, VR_EFORMAT, "%s: %s: HTTP 200 without a usable ETag", s3url, op);
    if (rc == 0)
        memcpy(u->etags[no - 1], r->etag, sizeof u->etags[0]);
    return rc;
}

static int s3_complete(const char *s3url, struct s3_upload *u, int replace, struct s3_reply *r,
                       vr_err *err)
{
    size_t cap = 128 + (size_t)u->parts * (64 + sizeof u->etags[0]), n = 0;
    char *x = malloc(cap), q[3 * 1024 + 16];
    if (!x)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    n += (size_t)snprintf(x + n, cap - n, "<CompleteMultipartUpload>");
    for (int i = 0; i < u->parts; i++)
        n += (size_t)snprintf(x + n, cap - n, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag>"
                              "</Part>", i + 1, u->etags[i]);
    n += (size_t)snprintf(x + n, cap - n, "</CompleteMultipartUpload>");
    snprintf(q, sizeof q, "uploadId=%s", u->qid);
    int rc = s3_req(s3url, "POST", q, x, n, replace ? NULL : S3_IF_NEW,
                    "CompleteMultipartUpload", r, err);
    free(x);
    /* S3 may answer 200 and then an <Error> in the body: not complete */
    if (rc == 0 && (r->status != 200 || strstr(r->body, "<Error>")))
        rc = s3_reply_err(s3url, "CompleteMultipartUpload", r, err);
    return rc;
}

/* AbortMultipartUpload; a failure is logged (the parts stay until a
 * lifecycle rule or an operator removes them). */
static void s3_abort(const char *s3url, const struct s3_upload *u)
{
    char q[3 * 1024 + 16];
    struct s3_reply *r = malloc(sizeof *r);
    vr_err e = { 0 };
    snprintf(q, sizeof q, "uploadId=%s", u->qid);
    int rc = r ? s3_req(s3url, "DELETE", q, NULL, 0, NULL, "AbortMultipartUpload", r, &e)
               : vr_err_set(&e, VR_ENOMEM, "out of memory");
    if (rc == 0 && r->status != 204 && r->status != 200 && r->status != 404)
        rc = s3_reply_err(s3url, "AbortMultipartUpload", r, &e);
    if (rc < 0)
        log_warn("%s; upload %s's parts are left", e.msg, u->id);
    free(r);
}

/* The file fd (size bytes) in parts of part bytes through buf. */
static int s3_multipart(const char *s3url, int fd, int64_t size, int64_t part, uint8_t *buf,
                        int replace, struct s3_reply *r, vr_err *err)
{
    struct s3_upload u = { .parts = (int)((size + part - 1) / part) };
    if (!(u.etags = calloc((size_t)u.parts, sizeof *u.etags)))
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = s3_create(s3url, &u, r, err);
    if (rc < 0) {
        free(u.etags);
        return rc;
    }
    for (int i = 0; rc == 0 && i < u.parts; i++) {
        int64_t off = (int64_t)i * part, len = size - off < part ? size - off : part;
        if (pread(fd, buf, (size_t)len, off) != len)
            rc = vr_err_set(err, VR_EIO, "%s: part %d: the local file could not be read whole",
                            s3url, i + 1);
        else
            rc = s3_part(s3url, &u, i + 1, buf, (size_t)len, r, err);
    }
    if (rc == 0)
        rc = s3_complete(s3url, &u, replace, r, err);
    if (rc < 0)
        s3_abort(s3url, &u);
    free(u.etags);
    return rc;
}

/* ---- the whole file ---- */

int s3_put_file(const char *s3url, const char *local_path, int replace, vr_err *err)
{
    struct stat st;
    int64_t part = 0;
    uint8_t *buf = NULL;
    struct s3_reply *r = malloc(sizeof *r);
    int fd = open(local_path, O_RDONLY | O_CLOEXEC), rc;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        rc = vr_err_set(err, VR_EIO, "%s: cannot read it to upload it: %s", local_path,
                        fd < 0 ? strerror(errno) : "not a regular file");
        goto out;
    }
    if ((rc = s3_part_size(st.st_size, &part, err)) < 0)
        goto out;
    int64_t one = st.st_size < part ? st.st_size : part;
    if (!r || !(buf = malloc(one ? (size_t)one : 1))) {
        rc = vr_err_set(err, VR_ENOMEM, "out of memory (a part of %" PRId64 " bytes)", part);
        goto out;
    }
    if (st.st_size <= part) {
        if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
            rc = vr_err_set(err, VR_EIO, "%s: the local file could not be read whole", s3url);
        else
            rc = s3_put_once(s3url, buf, (size_t)st.st_size, replace, r, err);
    } else {
        rc = s3_multipart(s3url, fd, st.st_size, part, buf, replace, r, err);
    }
    if (rc == 0)
        log_info("%s: %lld bytes written (%s)", s3url, (long long)st.st_size,
                 st.st_size <= part ? "one PUT" : "multipart upload");
    if (rc < 0 && strstr(err->msg, "HTTP 412")) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err->msg);
        rc = vr_err_set(err, VR_EINVAL, "%.400s (the output exists and may not be replaced: -y)",
                        m);
    }
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    free(r);
    return rc;
}

int s3_exists(const char *s3url, vr_err *err)
{
    struct s3_reply *r = malloc(sizeof *r);
    if (!r)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = s3_req(s3url, "HEAD", "", NULL, 0, NULL, "HeadObject", r, err);
    if (rc == 0)
        rc = r->status == 404 ? 0 : r->status == 200 ? 1 : s3_reply_err(s3url, "HeadObject", r, err);
    free(r);
    return rc;
}

int s3_delete(const char *s3url, vr_err *err)
{
    struct s3_reply *r = malloc(sizeof *r);
    if (!r)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = s3_req(s3url, "DELETE", "", NULL, 0, NULL, "DeleteObject", r, err);
    if (rc == 0 && r->status != 204 && r->status != 200 && r->status != 404)
        rc = s3_reply_err(s3url, "DeleteObject", r, err);
    free(r);
    return rc;
}
