/*
 * http_opts.h - the libcurl options every request of an upload or a
 * store's API sets (http_put.c's WebDAV calls, s3_req.c's S3 calls): one
 * place for the rules they share.
 */
#ifndef VR_HTTP_OPTS_H
#define VR_HTTP_OPTS_H

#include <curl/curl.h>

/* On h: url; http and https only; no redirect followed (a redirect could
 * lead past the address rule); every socket opened through open(arg),
 * which applies that rule; vrseg's user agent; 10 s to connect; a transfer
 * under 1 KB/s for 30 s is a stall; no signals (threads); libcurl's
 * message into cerr (CURL_ERROR_SIZE). */
void http_opts_set(CURL *h, const char *url, curl_opensocket_callback open, void *arg,
                   char *cerr);

#endif
