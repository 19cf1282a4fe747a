/*
 * http_s3.c - s3:// URLs signed with AWS SigV4 (http_s3.h).
 */
#include "http_s3.h"

#include "storage.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S3_KEY_MAX 1024
/* SHA-256 of an empty body: a GET's payload hash, which S3 wants sent */
#define S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* A bucket name as S3 allows it: 3-63 of [a-z0-9.-]. */
static int s3_bucket_ok(const char *b, size_t n)
{
    if (n < 3 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)b[i]) && !isdigit((unsigned char)b[i]) && b[i] != '.' &&
            b[i] != '-')
            return 0;
    return 1;
}

/* key percent-encoded as SigV4 canonicalizes it (unreserved and '/' kept). */
static int s3_key_escape(const char *k, char *out, size_t n)
{
    size_t j = 0;
    for (; *k; k++) {
        unsigned char c = (unsigned char)*k;
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
            if (j + 1 >= n)
                return -1;
            out[j++] = (char)c;
        } else {
            if (j + 3 >= n)
                return -1;
            j += (size_t)snprintf(out + j, n - j, "%%%02X", c);
        }
    }
    out[j] = '\0';
    return 0;
}

/* The credentials into id, secret and token (token may stay ""). */
static int s3_credentials(char *id, size_t ni, char *secret, size_t ns, char *token, size_t nt,
                          vr_err *err)
{
    const char *ei = getenv("AWS_ACCESS_KEY_ID"), *es = getenv("AWS_SECRET_ACCESS_KEY");
    const char *et = getenv("AWS_SESSION_TOKEN"), *file = getenv("VR_S3_CREDENTIALS");
    token[0] = '\0';
    if (ei && *ei && es && *es) {
        snprintf(id, ni, "%s", ei);
        snprintf(secret, ns, "%s", es);
        if (et)
            snprintf(token, nt, "%s", et);
        return 0;
    }
    if (!file || !*file)
        return vr_err_set(err, VR_EACCES, "s3: no credentials: set AWS_ACCESS_KEY_ID and "
                          "AWS_SECRET_ACCESS_KEY, or VR_S3_CREDENTIALS to a 0600 file");
    char line[2048];
    int rc = storage_read_secret(file, line, sizeof line, err);
    if (rc < 0)
        return rc;
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || c1 == line || !c1[1]) {
        memset(line, 0, sizeof line);
        return vr_err_set(err, VR_EINVAL, "%s: want '<access key id>:<secret access key>' on "
                          "its first line", file);
    }
    *c1 = '\0';
    if (c2)
        *c2 = '\0';
    snprintf(id, ni, "%.*s", (int)ni - 1, line);
    snprintf(secret, ns, "%.*s", (int)ns - 1, c1 + 1);
    if (c2)
        snprintf(token, nt, "%.*s", (int)nt - 1, c2 + 1);
    memset(line, 0, sizeof line);
    return 0;
}

int http_s3_have_credentials(void)
{
    const char *i = getenv("AWS_ACCESS_KEY_ID"), *s = getenv("AWS_SECRET_ACCESS_KEY");
    const char *f = getenv("VR_S3_CREDENTIALS");
    return (i && *i && s && *s) || (f && *f);
}

int http_s3_prepare(CURL *h, const char *s3url, char *url, size_t n, struct curl_slist **hs,
                    vr_err *err)
{
    return http_s3_prepare_payload(h, s3url, S3_EMPTY_SHA256, url, n, hs, err);
}

int http_s3_prepare_payload(CURL *h, const char *s3url, const char *payload_hex, char *url,
                            size_t n, struct curl_slist **hs, vr_err *err)
{
    *hs = NULL;
    const char *b = s3url + 5, *slash = strchr(b, '/');
    char key[3 * S3_KEY_MAX + 1];
    if (!slash || !s3_bucket_ok(b, (size_t)(slash - b)) || !slash[1] ||
        strlen(slash + 1) > S3_KEY_MAX || strpbrk(slash + 1, "?#") ||
        s3_key_escape(slash + 1, key, sizeof key) < 0)
        return vr_err_set(err, VR_EINVAL, "%.200s: not s3://<bucket>/<key> (a bucket of 3-63 "
                          "[a-z0-9.-], a key of at most %d bytes, no '?' or '#')", s3url,
                          S3_KEY_MAX);
    int bl = (int)(slash - b);
    const char *ep = getenv("VR_S3_ENDPOINT");
    if (!ep || !*ep)
        ep = getenv("AWS_ENDPOINT_URL");
    const char *region = getenv("AWS_REGION");
    if (!region || !*region)
        region = getenv("AWS_DEFAULT_REGION");
    if (!region || !*region)
        region = "us-east-1";
    for (const char *r = region; *r; r++)
        if (!isalnum((unsigned char)*r) && *r != '-')
            return vr_err_set(err, VR_EINVAL, "s3: region '%.64s' is not [a-z0-9-]", region);
    int w;
    if (ep && *ep) {
        if (strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8))
            return vr_err_set(err, VR_EINVAL, "s3: endpoint %.200s is not http(s)://", ep);
        size_t el = strlen(ep);
        w = snprintf(url, n, "%.*s/%.*s/%s", (int)(el && ep[el - 1] == '/' ? el - 1 : el), ep,
                     bl, b, key);
    } else {
        w = snprintf(url, n, "https://%.*s.s3.%s.amazonaws.com/%s", bl, b, region, key);
    }
    if (w < 0 || (size_t)w >= n)
        return vr_err_set(err, VR_EINVAL, "%.200s: too long", s3url);
    char id[256], secret[512], token[1536], sig[128];
    int rc = s3_credentials(id, sizeof id, secret, sizeof secret, token, sizeof token, err);
    if (rc < 0)
        return rc;
    snprintf(sig, sizeof sig, "aws:amz:%s:s3", region);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sig);
    curl_easy_setopt(h, CURLOPT_USERNAME, id);   /* libcurl copies both */
    curl_easy_setopt(h, CURLOPT_PASSWORD, secret);
    memset(secret, 0, sizeof secret);
    char ph[96];
    snprintf(ph, sizeof ph, "x-amz-content-sha256: %.64s", payload_hex);
    struct curl_slist *l = curl_slist_append(NULL, ph);
    if (l && token[0]) {
        char th[1600];
        snprintf(th, sizeof th, "x-amz-security-token: %s", token);
        struct curl_slist *t = curl_slist_append(l, th);
        memset(th, 0, sizeof th);
        l = t ? t : (curl_slist_free_all(l), NULL);
    }
    memset(token, 0, sizeof token);
    if (!l)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    *hs = l;
    return 0;
}
