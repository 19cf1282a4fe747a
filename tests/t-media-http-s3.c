/*
 * t-media-http-s3.c - s3:// requests are signed right (AWS SigV4 through
 * libcurl's CURLOPT_AWS_SIGV4). The check is this file's own SigV4 signer,
 * written from AWS's specification with libcrypto's HMAC and SHA-256, which
 * first reproduces the signature AWS publishes for its "GET Object" example
 * (examplebucket, test.txt, Range bytes=0-9, 2013-05-24); then the requests
 * vrseg sends to a real nginx (its access log keeps the method, path, Host,
 * Range, X-Amz-Date, X-Amz-Content-Sha256 and Authorization of each) must
 * carry exactly the signature that signer computes from them. Real enough:
 * an S3 server recomputes the same canonical request from the same
 * headers; what nginx does not do (reject a bad one) the comparison does.
 * Also: the range reader's retries and identity pin from the first read.
 */
#include "http_io.h"
#include "util-nginx.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tnginx N;
static char W[256];

static void setup(void)
{
    snprintf(W, sizeof W, "/tmp/vrs3-XXXXXX");
    cr_assert_not_null(mkdtemp(W));
}

static void teardown(void)
{
    tnginx_stop(&N);
    tsh("rm -rf '%s'", W);
}

TestSuite(media_http_s3, .init = setup, .fini = teardown, .timeout = 60);

/* ---- a SigV4 signer from AWS's specification ---- */

static void hex(const unsigned char *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static void sha256_hex(const char *s, char out[65])
{
    unsigned char d[32];
    SHA256((const unsigned char *)s, strlen(s), d);
    hex(d, 32, out);
}

static void hmac(const unsigned char *key, size_t kl, const char *msg, unsigned char out[32])
{
    unsigned int ol = 32;
    HMAC(EVP_sha256(), key, (int)kl, (const unsigned char *)msg, strlen(msg), out, &ol);
}

/* The signature of a GET of `uri` whose signed headers are `names`
 * (";"-joined, sorted) with `values` in the same order. */
static void sigv4(const char *secret, const char *date, const char *region, const char *uri,
                  const char *names, const char *const *values, const char *payload,
                  char sig[65])
{
    char canon[4096], sts[1024], h[65], k[256], day[9];
    int n = snprintf(canon, sizeof canon, "GET\n%s\n\n", uri);
    char list[256];
    snprintf(list, sizeof list, "%s", names);
    int i = 0;
    for (char *t = strtok(list, ";"); t; t = strtok(NULL, ";"))
        n += snprintf(canon + n, sizeof canon - n, "%s:%s\n", t, values[i++]);
    snprintf(canon + n, sizeof canon - n, "\n%s\n%s", names, payload);
    sha256_hex(canon, h);
    snprintf(day, sizeof day, "%.8s", date);
    snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/s3/aws4_request\n%s", date, day,
             region, h);
    unsigned char kd[32], kr[32], ks[32], kg[32], s[32];
    snprintf(k, sizeof k, "AWS4%s", secret);
    hmac((unsigned char *)k, strlen(k), day, kd);
    hmac(kd, 32, region, kr);
    hmac(kr, 32, "s3", ks);
    hmac(ks, 32, "aws4_request", kg);
    hmac(kg, 32, sts, s);
    hex(s, 32, sig);
}

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define AWS_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

Test(media_http_s3, the_signer_reproduces_aws_published_get_object_example)
{
    const char *v[] = { "examplebucket.s3.amazonaws.com", "bytes=0-9", EMPTY_SHA,
                        "20130524T000000Z" };
    char sig[65];
    sigv4(AWS_SECRET, "20130524T000000Z", "us-east-1", "/test.txt",
          "host;range;x-amz-content-sha256;x-amz-date", v, EMPTY_SHA, sig);
    cr_assert_str_eq(sig, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

/* Field `key` of an access-log line (key=value, or key="value") into out. */
static void field(const char *line, const char *key, char *out, size_t n)
{
    const char *p = strstr(line, key);
    out[0] = '\0';
    if (!p)
        return;
    p += strlen(key);
    int q = *p == '"';
    p += q;
    snprintf(out, n, "%.*s", (int)strcspn(p, q ? "\"" : " \n"), p);
}

Test(media_http_s3, s3_requests_carry_the_signature_the_specification_gives)
{
    char nd[300];
    snprintf(nd, sizeof nd, "%s/nginx", W);
    cr_assert_eq(tnginx_start(&N, nd), 0);
    cr_assert_eq(tsh("mkdir -p '%s/media-46/a b' && head -c 300000 /dev/urandom > "
                     "'%s/media-46/a b/k~1.bin'", N.www, N.www), 0);
    char ep[64];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", N.port);
    setenv("VR_S3_ENDPOINT", ep, 1);
    setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", 1);
    setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET, 1);
    setenv("AWS_REGION", "eu-west-3", 1);
    struct http_io_cfg cfg = { .allow_private = 1, .tries = 3, .backoff_ms = 10 };
    http_io_configure(&cfg);
    struct http_obj *o = NULL;
    vr_err e = { 0 };
    cr_assert_eq(http_obj_open("s3://media-46/a b/k~1.bin", NULL, &o, &e), 0, "%s", e.msg);
    cr_assert_eq(http_obj_size(o), 300000);
    static unsigned char buf[100000];
    cr_assert_eq(http_obj_read(o, 1000, buf, sizeof buf, &e), 0, "%s", e.msg);
    http_obj_free(&o);
    unsetenv("VR_S3_ENDPOINT");
    unsetenv("AWS_SECRET_ACCESS_KEY");

    FILE *f = fopen(N.access, "r");
    cr_assert_not_null(f);
    char line[4096];
    int checked = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "/media-46/"))
            continue; /* tnginx_start's own requests */
        char uri[512], host[128], range[64], date[32], sha[80], auth[512];
        cr_assert_eq(sscanf(line, "%*s \"GET %511s HTTP/1.1\" 206", uri), 1, "%s", line);
        cr_assert_str_eq(uri, "/media-46/a%20b/k~1.bin");
        field(line, "host=", host, sizeof host);
        field(line, "date=", date, sizeof date);
        field(line, "sha=", sha, sizeof sha);
        field(line, "auth=", auth, sizeof auth);
        const char *rq = strstr(line, "\"bytes=");
        cr_assert_not_null(rq);
        snprintf(range, sizeof range, "%.*s", (int)strcspn(rq + 1, "\""), rq + 1);
        char want_cred[128], names[256], got[65], sig[65];
        snprintf(want_cred, sizeof want_cred,
                 "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/%.8s/eu-west-3/s3/aws4_request, ",
                 date);
        cr_assert(!strncmp(auth, want_cred, strlen(want_cred)), "%s", auth);
        field(auth, "SignedHeaders=", names, sizeof names);
        names[strcspn(names, ",")] = '\0';
        field(auth, "Signature=", got, sizeof got);
        /* the values of the signed headers, in their order */
        const char *vals[4];
        int nv = 0;
        char list[256];
        snprintf(list, sizeof list, "%s", names);
        for (char *t = strtok(list, ";"); t; t = strtok(NULL, ";"))
            vals[nv++] = !strcmp(t, "host") ? host : !strcmp(t, "range") ? range
                         : !strcmp(t, "x-amz-date") ? date
                         : !strcmp(t, "x-amz-content-sha256") ? sha : "?";
        cr_assert(strstr(names, "host") && strstr(names, "x-amz-date") &&
                  strstr(names, "x-amz-content-sha256"), "%s", names);
        cr_assert_str_eq(sha, EMPTY_SHA);
        sigv4(AWS_SECRET, date, "eu-west-3", uri, names, vals, EMPTY_SHA, sig);
        cr_assert_str_eq(got, sig, "%s", line);
        checked++;
    }
    fclose(f);
    cr_assert_geq(checked, 2);
}

Test(media_http_s3, no_credentials_no_request)
{
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("VR_S3_CREDENTIALS");
    struct http_obj *o = NULL;
    vr_err e = { 0 };
    cr_assert_eq(http_obj_open("s3://media-46/x.mp4", NULL, &o, &e), VR_EACCES);
    cr_assert(strstr(e.msg, "no credentials"), "%s", e.msg);
    /* a credentials file others may read is refused */
    char cf[300];
    snprintf(cf, sizeof cf, "%s/creds", W);
    cr_assert_eq(tsh("echo 'AKID:SECRETSECRET' > '%s' && chmod 644 '%s'", cf, cf), 0);
    setenv("VR_S3_CREDENTIALS", cf, 1);
    cr_assert_lt(http_obj_open("s3://media-46/x.mp4", NULL, &o, &e), 0);
    cr_assert_null(strstr(e.msg, "SECRETSECRET"));
    unsetenv("VR_S3_CREDENTIALS");
}
