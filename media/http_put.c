/*
 * http_put.c - an output written to a WebDAV store: PUT to a temporary
 * name, then MOVE (http_put.h).
 */
#define _GNU_SOURCE /* pread64 through _FILE_OFFSET_BITS */
#include "http_put.h"

#include "http_io.h"
#include "http_opts.h"
#include "log.h"
#include "net_addr.h"
#include "s3_put.h"
#include "url_root.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HTTP_PUT_URL_MAX 4096

/* One request's state, as libcurl's callbacks see it. */
struct http_req {
    CURL *h;
    char shown[HTTP_PUT_URL_MAX];   /* the object named in messages */
    char refused[64];               /* an address refused by the rule ("" none) */
    int allow_private;
    int reached;                    /* a server answered (a temporary object may exist) */
    int fd;                         /* the body's file (a PUT), else -1 */
    off_t off, size;
    const volatile sig_atomic_t *stop; /* set: the request and its retries given up */
};

static int http_req_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    const struct http_req *r = arg;
    (void)a, (void)b, (void)c, (void)d;
    return r->stop && *r->stop; /* a hung store does not hold a shutdown */
}

static size_t http_req_discard(char *p, size_t sz, size_t nm, void *arg)
{
    (void)p, (void)arg;
    return sz * nm; /* a WebDAV answer's body says nothing its status does not */
}

static size_t http_req_body(char *p, size_t sz, size_t nm, void *arg)
{
    struct http_req *r = arg;
    size_t want = sz * nm;
    if ((off_t)want > r->size - r->off)
        want = (size_t)(r->size - r->off);
    if (!want)
        return 0;
    ssize_t n = pread(r->fd, p, want, r->off);
    if (n <= 0)
        return CURL_READFUNC_ABORT; /* the local file shrank or failed: no short object */
    r->off += n;
    return (size_t)n;
}

static int http_req_seek(void *arg, curl_off_t to, int origin)
{
    struct http_req *r = arg;
    if (origin != SEEK_SET || to < 0 || to > r->size)
        return CURL_SEEKFUNC_CANTSEEK;
    r->off = (off_t)to;
    return CURL_SEEKFUNC_OK;
}

static curl_socket_t http_req_open(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct http_req *r = arg;
    (void)purpose;
    if (!r->allow_private && net_addr_private(&a->addr)) {
        net_addr_text(&a->addr, r->refused, sizeof r->refused);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

enum { HTTP_REQ_OK = 0, HTTP_REQ_RETRY = 1 };

/* One request: method on url (with headers hs; a PUT sends r->fd). Returns
 * HTTP_REQ_OK with *status, HTTP_REQ_RETRY (why in err), or VR_E*. */
static int http_req_once(struct http_req *r, const char *method, const char *url,
                         struct curl_slist *hs, long *status, vr_err *err)
{
    char cerr[CURL_ERROR_SIZE] = "";
    CURL *h = r->h;
    curl_easy_reset(h);
    http_opts_set(h, url, http_req_open, r, cerr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_req_discard);
    if (hs)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
    if (!strcmp(method, "PUT")) {
        r->off = 0;
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, http_req_body);
        curl_easy_setopt(h, CURLOPT_READDATA, r);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, http_req_seek);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, r);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->size);
    } else if (!strcmp(method, "HEAD")) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
    if (r->stop) {
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, http_req_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, r);
    }
    r->refused[0] = '\0';
    CURLcode rc = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    *status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    r->reached |= *status > 0;
    if (r->refused[0])
        return vr_err_set(err, VR_EACCES, "%s: refused: the address %s is loopback, private or "
                          "link-local (--storage-allow-private allows it)", r->shown, r->refused);
    if (rc == CURLE_ABORTED_BY_CALLBACK && r->stop && *r->stop)
        return vr_err_set(err, VR_EIO, "%s: %s: given up (stopping)", r->shown, method);
    if (rc == CURLE_ABORTED_BY_CALLBACK)
        return vr_err_set(err, VR_EIO, "%s: %s: the local file could not be read whole",
                          r->shown, method);
    if (rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_URL_MALFORMAT)
        return vr_err_set(err, VR_EINVAL, "%s: refused: %s", r->shown,
                          cerr[0] ? cerr : curl_easy_strerror(rc));
    if (rc != CURLE_OK) {
        vr_err_set(err, VR_EIO, "%s: %s: %s", r->shown, method,
                   cerr[0] ? cerr : curl_easy_strerror(rc));
        return HTTP_REQ_RETRY;
    }
    if (*status >= 500 || *status == 429 || *status == 408) {
        vr_err_set(err, VR_EIO, "%s: %s: HTTP %ld", r->shown, method, *status);
        return HTTP_REQ_RETRY;
    }
    return HTTP_REQ_OK;
}

/* http_req_once retried with the read's back-off; HTTP_REQ_OK (*status
 * set) or VR_E*. */
static int http_req(struct http_req *r, const char *method, const char *url,
                    struct curl_slist *hs, long *status, vr_err *err)
{
    long wait = http_io_settings().backoff_ms;
    for (int t = 1;; t++) {
        int rc = http_req_once(r, method, url, hs, status, err);
        if (rc == HTTP_REQ_RETRY && r->stop && *r->stop)
            return err ? err->code : VR_EIO;
        if (rc != HTTP_REQ_RETRY || (rc = http_io_retry_wait(t, &wait, err)) < 0)
            return rc;
    }
}

/* A status that is not one of ok_a/ok_b as an error naming the method. */
static int http_req_status(const struct http_req *r, const char *method, long st, long ok_a,
                           long ok_b, vr_err *err)
{
    if (st == ok_a || st == ok_b)
        return 0;
    if (st >= 300 && st < 400)
        return vr_err_set(err, VR_EINVAL, "%s: %s: HTTP %ld: a redirect is not followed for a "
                          "write", r->shown, method, st);
    return vr_err_set(err, st == 404 || st == 409 ? VR_ENOENT
                           : st == 401 || st == 403 ? VR_EACCES
                           : st == 412 ? VR_EINVAL : VR_EIO,
                      "%s: %s: HTTP %ld%s", r->shown, method, st,
                      st == 412 ? " (the output exists and may not be replaced: -y)" : "");
}

/* A URL a write may go to: http(s) without a query (http_put.h); an
 * object's, or a collection's (ending in '/') when `collection`. */
static int http_req_begin(struct http_req *r, const char *url, int collection, vr_err *err)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    http_io_shown(url, r->shown, sizeof r->shown);
    int rc = url_root_plain(url, err);
    if (rc < 0)
        return rc;
    if (!url_root_is_url(url) || strlen(url) >= HTTP_PUT_URL_MAX - 64)
        return vr_err_set(err, VR_EINVAL, "%s: not an http(s):// URL", r->shown);
    if (strchr(url, '?'))
        return vr_err_set(err, VR_ENOTSUP, "%s: a destination with a query string (a presigned "
                          "PUT): not yet", r->shown);
    const char *path = strchr(strstr(url, "://") + 3, '/');
    if (!path || (path[strlen(path) - 1] == '/') != !!collection)
        return vr_err_set(err, VR_EINVAL, "%s: names %s", r->shown,
                          collection ? "an object, not a collection" : "a collection, not an object");
    http_io_global_init();
    r->allow_private = http_io_settings().allow_private;
    if (!(r->h = curl_easy_init()))
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    return 0;
}

static void http_req_end(struct http_req *r)
{
    if (r->h)
        curl_easy_cleanup(r->h);
    r->h = NULL;
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}

int http_exists(const char *url, vr_err *err)
{
    if (!strncmp(url, "s3://", 5))
        return s3_exists(url, err);
    struct http_req r;
    long st = 0;
    int rc = http_req_begin(&r, url, 0, err);
    if (rc == 0)
        rc = http_req(&r, "HEAD", url, NULL, &st, err);
    if (rc == 0)
        rc = st == 404 ? 0 : http_req_status(&r, "HEAD", st, 200, 204, err) ? : 1;
    http_req_end(&r);
    return rc;
}

int http_delete(const char *url, vr_err *err)
{
    if (!strncmp(url, "s3://", 5))
        return s3_delete(url, err);
    struct http_req r;
    long st = 0;
    int rc = http_req_begin(&r, url, 0, err);
    if (rc == 0)
        rc = http_req(&r, "DELETE", url, NULL, &st, err);
    if (rc == 0 && st != 404 && st != 410)
        rc = http_req_status(&r, "DELETE", st, 200, 204, err);
    http_req_end(&r);
    return rc;
}

int http_delete_tree(const char *url, const volatile sig_atomic_t *stop, vr_err *err)
{
    struct http_req r;
    long st = 0;
    int rc = http_req_begin(&r, url, 1, err);
    r.stop = stop;
    struct curl_slist *hs = rc == 0 ? curl_slist_append(NULL, "Depth: infinity") : NULL;
    if (rc == 0 && !hs)
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
    if (rc == 0) /* its answer's body is discarded: nothing the store says is read */
        rc = http_req(&r, "DELETE", url, hs, &st, err);
    curl_slist_free_all(hs);
    if (rc == 0 && st == 207) /* Multi-Status: some members failed */
        rc = vr_err_set(err, VR_EIO, "%s: DELETE: HTTP 207: some of it was not removed", r.shown);
    else if (rc == 0 && (st == 405 || st == 501))
        rc = vr_err_set(err, VR_ENOTSUP, "%s: DELETE of a collection: HTTP %ld", r.shown, st);
    else if (rc == 0 && st != 404 && st != 410)
        rc = http_req_status(&r, "DELETE", st, 200, 204, err);
    http_req_end(&r);
    return rc;
}

/* The temporary name beside url: its own, in the same collection. */
static void http_put_temp(const char *url, char *tmp, size_t n)
{
    static atomic_uint seq;
    snprintf(tmp, n, "%s.vrseg-part-%ld-%u", url, (long)getpid(), atomic_fetch_add(&seq, 1));
}

int http_put_file(const char *url, const char *local_path, int replace, vr_err *err)
{
    if (!strncmp(url, "s3://", 5)) /* no MOVE in S3: one PUT or a multipart upload */
        return s3_put_file(url, local_path, replace, err);
    struct http_req r;
    struct stat st;
    char tmp[HTTP_PUT_URL_MAX], dest[HTTP_PUT_URL_MAX + 16];
    long code = 0;
    int rc = http_req_begin(&r, url, 0, err);
    if (rc < 0)
        goto out;
    if ((r.fd = open(local_path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(r.fd, &st) < 0 ||
        !S_ISREG(st.st_mode)) {
        rc = vr_err_set(err, VR_EIO, "%s: cannot read it to upload it: %s", local_path,
                        r.fd < 0 ? strerror(errno) : "not a regular file");
        goto out;
    }
    r.size = st.st_size;
    http_put_temp(url, tmp, sizeof tmp);
    if ((rc = http_req(&r, "PUT", tmp, NULL, &code, err)) < 0 ||
        (rc = http_req_status(&r, "PUT", code, 201, 204, err)) < 0)
        goto drop;
    snprintf(dest, sizeof dest, "Destination: %s", url);
    struct curl_slist *hs = curl_slist_append(NULL, dest);
    struct curl_slist *h2 = hs ? curl_slist_append(hs, replace ? "Overwrite: T" : "Overwrite: F")
                               : NULL;
    if (!h2) {
        curl_slist_free_all(hs);
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
        goto drop;
    }
    rc = http_req(&r, "MOVE", tmp, hs, &code, err);
    curl_slist_free_all(hs);
    if (rc == 0)
        rc = http_req_status(&r, "MOVE", code, 201, 204, err);
    if (rc == 0) {
        log_info("%s: %lld bytes written (PUT to a temporary name, then MOVE)", r.shown,
                 (long long)r.size);
        goto out;
    }
drop:;
    vr_err ignored = { 0 };
    int reached = r.reached;
    http_req_end(&r);
    if (reached && http_delete(tmp, &ignored) < 0)
        log_warn("%s; its temporary object is left", ignored.msg);
out:
    http_req_end(&r);
    return rc;
}
