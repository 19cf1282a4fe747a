/*
 * util-http.c - GET with libcurl for the tests (util-http.h).
 */
#include "util-http.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

struct body {
    char *p;
    size_t len;
};

static size_t on_data(char *d, size_t sz, size_t n, void *arg)
{
    struct body *b = arg;
    size_t add = sz * n;
    if (b->len + add > (8u << 20))
        return 0;
    char *np = realloc(b->p, b->len + add + 1);
    if (!np)
        return 0;
    memcpy(np + b->len, d, add);
    b->p = np;
    b->len += add;
    b->p[b->len] = '\0';
    return add;
}

long thttp_get(const char *url, char **out, long timeout_s)
{
    struct body b = { calloc(1, 1), 0 };
    long code = 0;
    CURL *c = curl_easy_init();
    if (c) {
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        if (curl_easy_perform(c) == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(c);
    }
    *out = b.p;
    return code;
}
