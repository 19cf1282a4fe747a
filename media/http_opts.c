/*
 * http_opts.c - the libcurl options uploads and store calls share
 * (http_opts.h).
 */
#include "http_opts.h"

#include "version.h"

#include <stdio.h>

void http_opts_set(CURL *h, const char *url, curl_opensocket_callback open, void *arg,
                   char *cerr)
{
    char ua[96];
    snprintf(ua, sizeof ua, "vrseg/%s", vr_version());
    curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85: the _STR form */
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, arg);
    curl_easy_setopt(h, CURLOPT_USERAGENT, ua); /* libcurl keeps a copy */
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 30L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
}
