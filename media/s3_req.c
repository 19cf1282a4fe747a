/*
 * s3_req.c - one signed, retried request to an S3 store (s3_req.h).
 */
#include "s3_req.h"

#include "http_io.h"
#include "http_opts.h"
#include "http_s3.h"
#include "net_addr.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define S3_REQ_URL_MAX 4096

/* One request's state, as libcurl's callbacks see it. */
struct s3_call {
    CURL *h;
    struct s3_reply *r;
    size_t got;           /* body bytes kept */
    char refused[64];     /* an address refused by the rule ("" none) */
};

static size_t s3_on_body(char *p, size_t sz, size_t nm, void *arg)
{
    struct s3_call *c = arg;
    size_t n = sz * nm, room = sizeof c->r->body - 1 - c->got;
    memcpy(c->r->body + c->got, p, n < room ? n : room);
    c->got += n < room ? n : room;
    c->r->body[c->got] = '\0';
    return n; /* the rest of a long reply is not needed to judge it */
}

static size_t s3_on_header(char *p, size_t sz, size_t nm, void *arg)
{
    struct s3_call *c = arg;
    size_t n = sz * nm, k = 0;
    if (n > 5 && !strncasecmp(p, "etag:", 5)) {
        const char *s = p + 5, *e = p + n;
        while (s < e && *s == ' ')
            s++;
        for (; s < e && k + 1 < sizeof c->r->etag; s++)
            if ((unsigned char)*s > 0x20 && (unsigned char)*s < 0x7f)
                c->r->etag[k++] = *s;
        c->r->etag[k] = '\0';
    }
    return n;
}

static curl_socket_t s3_on_open(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct s3_call *c = arg;
    (void)purpose;
    if (!http_io_settings().allow_private && net_addr_private(&a->addr)) {
        net_addr_text(&a->addr, c->refused, sizeof c->refused);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

/* SHA-256 of the body as lowercase hex. 0 or -1. */
static int s3_sha256_hex(const void *p, size_t n, char out[65])
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dl = 0;
    if (!EVP_Digest(p ? p : "", n, d, &dl, EVP_sha256(), NULL) || dl != 32)
        return -1;
    for (unsigned i = 0; i < dl; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
    return 0;
}

enum { S3_REQ_OK = 0, S3_REQ_RETRY = 1 };

/* The options every try sets after curl_easy_reset. */
static void s3_setopts(struct s3_call *c, const char *url, struct curl_slist *hs, char *cerr)
{
    CURL *h = c->h;
    http_opts_set(h, url, s3_on_open, c, cerr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, s3_on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, s3_on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
}

/* One try; S3_REQ_OK (r filled), S3_REQ_RETRY (why in err) or VR_E*. */
static int s3_once(struct s3_call *c, const char *s3url, const char *method, const char *query,
                   const void *body, size_t len, const char *header, const char *op, vr_err *err)
{
    char url[S3_REQ_URL_MAX], hash[65], cerr[CURL_ERROR_SIZE] = "";
    struct curl_slist *hs = NULL;
    if (s3_sha256_hex(body, len, hash) < 0)
        return vr_err_set(err, VR_ENOMEM, "%s: %s: SHA-256 failed", s3url, op);
    curl_easy_reset(c->h);
    int rc = http_s3_prepare_payload(c->h, s3url, hash, url, sizeof url - 512, &hs, err);
    if (rc < 0)
        return rc;
    if (query[0])
        snprintf(url + strlen(url), sizeof url - strlen(url), "?%s", query);
    /* no "Expect:" to drop libcurl's own: 7.88 would sign the empty header it never sends */
    const char *extra[] = { header, body ? "Content-Type: application/octet-stream" : NULL };
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++) {
        struct curl_slist *t = extra[i] ? curl_slist_append(hs, extra[i]) : hs;
        if (!t) {
            curl_slist_free_all(hs);
            return vr_err_set(err, VR_ENOMEM, "out of memory");
        }
        hs = t;
    }
    s3_setopts(c, url, hs, cerr);
    if (!strcmp(method, "HEAD")) {
        curl_easy_setopt(c->h, CURLOPT_NOBODY, 1L);
    } else {
        curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, method);
        if (body || !strcmp(method, "POST")) { /* libcurl signs the POSTFIELDS it sends */
            curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
            curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body ? body : "");
        }
    }
    c->got = 0;
    c->refused[0] = c->r->body[0] = c->r->etag[0] = '\0';
    CURLcode cc = curl_easy_perform(c->h);
    curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hs);
    c->r->status = 0;
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->r->status);
    c->r->reached |= c->r->status > 0;
    if (c->refused[0])
        return vr_err_set(err, VR_EACCES, "%s: refused: the address %s is loopback, private or "
                          "link-local (--storage-allow-private allows it)", s3url, c->refused);
    if (cc == CURLE_UNSUPPORTED_PROTOCOL || cc == CURLE_URL_MALFORMAT)
        return vr_err_set(err, VR_EINVAL, "%s: refused: %s", s3url,
                          cerr[0] ? cerr : curl_easy_strerror(cc));
    if (cc != CURLE_OK) {
        vr_err_set(err, VR_EIO, "%s: %s: %s", s3url, op, cerr[0] ? cerr : curl_easy_strerror(cc));
        return S3_REQ_RETRY;
    }
    long st = c->r->status;
    if (st >= 500 || st == 429 || st == 408) {
        s3_reply_err(s3url, op, c->r, err);
        return S3_REQ_RETRY;
    }
    return S3_REQ_OK;
}

int s3_req(const char *s3url, const char *method, const char *query, const void *body,
           size_t len, const char *header, const char *op, struct s3_reply *r, vr_err *err)
{
    http_io_global_init();
    memset(r, 0, sizeof *r);
    struct s3_call c = { .r = r };
    if (!(c.h = curl_easy_init()))
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    long wait = http_io_settings().backoff_ms;
    int rc;
    for (int t = 1;; t++) {
        rc = s3_once(&c, s3url, method, query, body, len, header, op, err);
        if (rc != S3_REQ_RETRY || (rc = http_io_retry_wait(t, &wait, err)) < 0)
            break;
    }
    curl_easy_cleanup(c.h);
    return rc;
}

void s3_reply_code(const struct s3_reply *r, char *code, size_t n)
{
    const char *s = strstr(r->body, "<Code>"), *e = s ? strstr(s, "</Code>") : NULL;
    size_t k = 0;
    if (s && e)
        for (s += 6; s < e && k + 1 < n; s++)
            if ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9'))
                code[k++] = *s; /* an S3 code is one word: nothing else is shown */
    code[k] = '\0';
}

int s3_reply_err(const char *s3url, const char *op, const struct s3_reply *r, vr_err *err)
{
    char code[64];
    s3_reply_code(r, code, sizeof code);
    long st = r->status;
    return vr_err_set(err, st == 404 ? VR_ENOENT
                           : st == 401 || st == 403 ? VR_EACCES
                           : st == 412 ? VR_EINVAL : VR_EIO,
                      "%s: %s: HTTP %ld%s%s%s", s3url, op, st, code[0] ? " (" : "", code,
                      code[0] ? ")" : "");
}
