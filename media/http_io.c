/*
 * http_io.c - an object of an HTTP(S) or S3 store read by ranges, with
 * retries and its identity pinned (http_io.h).
 */
#include "http_io.h"

#include "http_s3.h"
#include "log.h"
#include "net_addr.h"
#include "url_root.h"
#include "version.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define HTTP_IO_REDIRECTS   3
#define HTTP_IO_CONNECT_MS  10000L
#define HTTP_IO_STALL_S     30L      /* a range that moves less than 1 KB/s this long: retried */
#define HTTP_IO_URL_MAX     4096

static struct http_io_cfg http_cfg = { .allow_private = 0, .tries = 6, .backoff_ms = 200 };
static pthread_once_t http_once = PTHREAD_ONCE_INIT;

void http_io_configure(const struct http_io_cfg *cfg)
{
    http_cfg = *cfg;
    if (http_cfg.tries < 1)
        http_cfg.tries = 1;
    if (http_cfg.backoff_ms < 0)
        http_cfg.backoff_ms = 0;
}

void http_io_configure_private(int allow)
{
    http_cfg.allow_private = allow;
}

struct http_io_cfg http_io_settings(void)
{
    return http_cfg;
}

static void http_global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void http_io_global_init(void)
{
    pthread_once(&http_once, http_global_init);
}

void http_io_shown(const char *url, char *buf, size_t n)
{
    const char *sep = strstr(url, "://");
    const char *host = sep ? sep + 3 : url;
    size_t hl = strcspn(host, "/?#");
    const char *at = memchr(host, '@', hl); /* user info: never shown */
    const char *from = at ? at + 1 : host;
    size_t pl = strcspn(host + hl, "?#");
    snprintf(buf, n, "%.*s%.*s%.*s", sep ? (int)(sep + 3 - url) : 0, url,
             (int)(host + hl - from), from, (int)pl, host + hl);
}

/* ---- one object ---- */

struct http_obj {
    CURL *h;
    char url[HTTP_IO_URL_MAX];      /* what libcurl requests (s3:// mapped) */
    char shown[HTTP_IO_URL_MAX];    /* for messages (http_io_shown) */
    struct curl_slist *hs;          /* extra headers (the S3 signing's), owned */
    int s3;                         /* signed: no redirects followed */
    int64_t size;
    char fp[HTTP_IO_FP_MAX];
    long long requests, retries;
    /* one response, as the callbacks see it */
    uint8_t *dst;                   /* where the body goes */
    size_t want, got;
    int overflow;                   /* more body than asked: a server ignoring the range */
    char etag[80], lastmod[64], crange[96];
    char refused[64];               /* an address refused by the rule ("" none) */
};

static size_t http_on_body(char *p, size_t sz, size_t nm, void *arg)
{
    struct http_obj *o = arg;
    size_t n = sz * nm;
    long st = 0;
    curl_easy_getinfo(o->h, CURLINFO_RESPONSE_CODE, &st);
    if (st != 206 && st != 200)
        return n; /* an error page (503 ...): its status says what happened */
    if (o->got + n > o->want) {
        o->overflow = 1;
        return 0; /* ends the transfer: CURLE_WRITE_ERROR */
    }
    memcpy(o->dst + o->got, p, n);
    o->got += n;
    return n;
}

/* Copies header `name`'s value (trimmed, printable ASCII only) into v. */
static void http_header_take(const char *line, size_t len, const char *name, char *v, size_t n)
{
    size_t nl = strlen(name);
    if (len <= nl || strncasecmp(line, name, nl))
        return;
    const char *s = line + nl;
    const char *e = line + len;
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    while (e > s && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' '))
        e--;
    size_t k = 0;
    for (; s < e && k + 1 < n; s++)
        if ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f)
            v[k++] = *s;
    v[k] = '\0';
}

static size_t http_on_header(char *p, size_t sz, size_t nm, void *arg)
{
    struct http_obj *o = arg;
    size_t n = sz * nm;
    if (n >= 5 && !strncmp(p, "HTTP/", 5)) /* a new response (a redirect's): forget the last */
        o->etag[0] = o->lastmod[0] = o->crange[0] = '\0';
    http_header_take(p, n, "etag:", o->etag, sizeof o->etag);
    http_header_take(p, n, "last-modified:", o->lastmod, sizeof o->lastmod);
    http_header_take(p, n, "content-range:", o->crange, sizeof o->crange);
    return n;
}

/* libcurl's socket opener for every address (after DNS, each redirect). */
static curl_socket_t http_on_open(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct http_obj *o = arg;
    (void)purpose;
    if (!http_cfg.allow_private && net_addr_private(&a->addr)) {
        net_addr_text(&a->addr, o->refused, sizeof o->refused);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

static void http_setopts(struct http_obj *o)
{
    char ua[96];
    snprintf(ua, sizeof ua, "vrseg/%s", vr_version());
    curl_easy_setopt(o->h, CURLOPT_URL, o->url);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85: the _STR forms */
    curl_easy_setopt(o->h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(o->h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(o->h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(o->h, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(o->h, CURLOPT_FOLLOWLOCATION, o->s3 ? 0L : 1L);
    curl_easy_setopt(o->h, CURLOPT_MAXREDIRS, (long)HTTP_IO_REDIRECTS);
    curl_easy_setopt(o->h, CURLOPT_OPENSOCKETFUNCTION, http_on_open);
    curl_easy_setopt(o->h, CURLOPT_OPENSOCKETDATA, o);
    curl_easy_setopt(o->h, CURLOPT_WRITEFUNCTION, http_on_body);
    curl_easy_setopt(o->h, CURLOPT_WRITEDATA, o);
    curl_easy_setopt(o->h, CURLOPT_HEADERFUNCTION, http_on_header);
    curl_easy_setopt(o->h, CURLOPT_HEADERDATA, o);
    curl_easy_setopt(o->h, CURLOPT_USERAGENT, ua);
    curl_easy_setopt(o->h, CURLOPT_CONNECTTIMEOUT_MS, HTTP_IO_CONNECT_MS);
    curl_easy_setopt(o->h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(o->h, CURLOPT_LOW_SPEED_TIME, HTTP_IO_STALL_S);
    curl_easy_setopt(o->h, CURLOPT_NOSIGNAL, 1L); /* worker threads: no SIGALRM */
    curl_easy_setopt(o->h, CURLOPT_ACCEPT_ENCODING, NULL); /* bytes as stored */
    if (o->hs)
        curl_easy_setopt(o->h, CURLOPT_HTTPHEADER, o->hs);
}

/* Parses "bytes a-b/total" into its numbers; 0 or -1. */
static int http_crange(const char *s, int64_t *a, int64_t *b, int64_t *total)
{
    long long x, y, t;
    if (sscanf(s, "bytes %lld-%lld/%lld", &x, &y, &t) != 3 || x < 0 || y < x || t <= y)
        return -1;
    *a = x, *b = y, *total = t;
    return 0;
}

/* The object's identity as its last response gave it into fp; -1 when it
 * has neither ETag nor Last-Modified. */
static int http_identity(const struct http_obj *o, int64_t total, char *fp, size_t n)
{
    const char *v = o->etag[0] ? o->etag : o->lastmod;
    if (!v[0])
        return -1;
    snprintf(fp, n, "http:%" PRId64 ":%.*s", total, 64, v);
    return 0;
}

enum { HTTP_OK = 0, HTTP_RETRY = 1 };

/* One GET of [off, off+len): HTTP_OK, HTTP_RETRY with why in err, or a
 * permanent VR_E*. */
static int http_get_once(struct http_obj *o, int64_t off, uint8_t *buf, size_t len,
                         const char *want_fp, vr_err *err)
{
    char range[64], cerr[CURL_ERROR_SIZE] = "";
    snprintf(range, sizeof range, "%" PRId64 "-%" PRId64, off, off + (int64_t)len - 1);
    o->dst = buf, o->want = len, o->got = 0, o->overflow = 0;
    o->etag[0] = o->lastmod[0] = o->crange[0] = o->refused[0] = '\0';
    curl_easy_setopt(o->h, CURLOPT_RANGE, range);
    curl_easy_setopt(o->h, CURLOPT_ERRORBUFFER, cerr);
    o->requests++;
    CURLcode rc = curl_easy_perform(o->h);
    curl_easy_setopt(o->h, CURLOPT_ERRORBUFFER, NULL);
    long st = 0;
    curl_easy_getinfo(o->h, CURLINFO_RESPONSE_CODE, &st);
    if (o->refused[0])
        return vr_err_set(err, VR_EACCES, "%s: refused: the address %s is loopback, private or "
                          "link-local (--storage-allow-private allows it)", o->shown, o->refused);
    if (o->overflow || (rc == CURLE_OK && st == 200))
        return vr_err_set(err, VR_ENOTSUP, "%s: the server answered a range request with the "
                          "whole object (HTTP %ld): it must serve byte ranges", o->shown, st);
    if (rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_TOO_MANY_REDIRECTS ||
        rc == CURLE_URL_MALFORMAT)
        return vr_err_set(err, VR_EINVAL, "%s: refused: %s", o->shown,
                          cerr[0] ? cerr : curl_easy_strerror(rc));
    if (rc != CURLE_OK) { /* resets, timeouts, a body cut short (CURLE_PARTIAL_FILE) */
        vr_err_set(err, VR_EIO, "%s: %s", o->shown, cerr[0] ? cerr : curl_easy_strerror(rc));
        return HTTP_RETRY;
    }
    if (st >= 500 || st == 429 || st == 408) {
        vr_err_set(err, VR_EIO, "%s: HTTP %ld", o->shown, st);
        return HTTP_RETRY;
    }
    if (st == 412)
        return vr_err_set(err, VR_EFORMAT, "%s changed during the job (HTTP 412): resubmit the "
                          "job", o->shown);
    if (st != 206)
        return vr_err_set(err, st == 404 || st == 410 ? VR_ENOENT
                               : st == 401 || st == 403 ? VR_EACCES : VR_EIO,
                          "%s: HTTP %ld", o->shown, st);
    int64_t a, b, total;
    char fp[HTTP_IO_FP_MAX];
    if (http_crange(o->crange, &a, &b, &total) < 0 || a != off)
        return vr_err_set(err, VR_EFORMAT, "%s: HTTP 206 with a Content-Range '%s' that is not "
                          "the range asked (bytes=%s)", o->shown, o->crange, range);
    if (http_identity(o, total, fp, sizeof fp) < 0)
        return vr_err_set(err, VR_ENOTSUP, "%s: the server sends neither ETag nor "
                          "Last-Modified: a change of the object could not be seen", o->shown);
    if (want_fp && strcmp(fp, want_fp))
        return vr_err_set(err, VR_EFORMAT, "%s changed during the job (size and ETag or "
                          "Last-Modified now %s, planned %s): resubmit the job", o->shown, fp,
                          want_fp);
    if ((uint64_t)(b - a + 1) > len || o->got != (size_t)(b - a + 1) ||
        (o->got < len && b + 1 != total)) {
        vr_err_set(err, VR_EIO, "%s: a truncated response (%zu bytes of %zu)", o->shown, o->got,
                   len);
        return HTTP_RETRY;
    }
    if (!o->fp[0]) {
        snprintf(o->fp, sizeof o->fp, "%s", fp);
        o->size = total;
    }
    return HTTP_OK;
}

int http_io_retry_wait(int t, long *wait, vr_err *err)
{
    if (t >= http_cfg.tries) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err->msg);
        return vr_err_set(err, VR_EIO, "%s (after %d tries)", m, t);
    }
    log_warn("%s; try %d of %d in %.1f s", err->msg, t + 1, http_cfg.tries, *wait / 1000.0);
    struct timespec ts = { *wait / 1000, (*wait % 1000) * 1000000L };
    nanosleep(&ts, NULL);
    *wait = *wait * 2 > 10000 ? 10000 : *wait * 2;
    return 0;
}

/* A GET retried as http_io.h says; 0 or VR_E*. */
static int http_get(struct http_obj *o, int64_t off, uint8_t *buf, size_t len,
                    const char *want_fp, vr_err *err)
{
    long wait = http_cfg.backoff_ms;
    for (int t = 1;; t++) {
        int rc = http_get_once(o, off, buf, len, want_fp, err);
        if (rc != HTTP_RETRY || (rc = http_io_retry_wait(t, &wait, err)) < 0)
            return rc;
        o->retries++;
    }
}

int http_obj_open(const char *url, const char *want_fp, struct http_obj **out, vr_err *err)
{
    *out = NULL;
    http_io_global_init();
    struct http_obj *o = calloc(1, sizeof *o);
    if (!o)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = 0;
    http_io_shown(url, o->shown, sizeof o->shown);
    if (!url_root_is_url(url) || strlen(url) >= sizeof o->url)
        rc = vr_err_set(err, VR_EINVAL, "%s: not an http(s):// or s3:// URL", o->shown);
    if (rc == 0 && !(o->h = curl_easy_init()))
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
    if (rc == 0 && !strncmp(url, "s3://", 5)) {
        o->s3 = 1;
        rc = http_s3_prepare(o->h, url, o->url, sizeof o->url, &o->hs, err);
    } else if (rc == 0) {
        snprintf(o->url, sizeof o->url, "%s", url);
    }
    uint8_t first;
    if (rc == 0) {
        http_setopts(o);
        rc = http_get(o, 0, &first, 1, want_fp, err);
    }
    if (rc < 0) {
        http_obj_free(&o);
        return rc;
    }
    *out = o;
    return 0;
}

int64_t http_obj_size(const struct http_obj *o)
{
    return o->size;
}

const char *http_obj_fp(const struct http_obj *o)
{
    return o->fp;
}

int http_obj_read(struct http_obj *o, int64_t off, uint8_t *buf, size_t len, vr_err *err)
{
    if (off < 0 || off > o->size || (int64_t)len > o->size - off)
        return vr_err_set(err, VR_EINVAL, "%s: a read past the end (%" PRId64 "+%zu of %" PRId64
                          ")", o->shown, off, len, o->size);
    return len ? http_get(o, off, buf, len, o->fp, err) : 0;
}

void http_obj_counts(const struct http_obj *o, long long *requests, long long *retries)
{
    *requests = o->requests;
    *retries = o->retries;
}

void http_obj_free(struct http_obj **op)
{
    struct http_obj *o = op ? *op : NULL;
    if (!o)
        return;
    if (o->h)
        curl_easy_cleanup(o->h);
    curl_slist_free_all(o->hs);
    free(o);
    *op = NULL;
}
