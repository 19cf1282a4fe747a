/*
 * util-http.h - test harness: GET a URL with libcurl, the status and the
 * body back (the controller's /metrics and /healthz).
 */
#ifndef VR_UTIL_HTTP_H
#define VR_UTIL_HTTP_H

/* GETs url within timeout_s; returns the HTTP status (0 when nothing
 * answered in time) and the body in *out (malloc'd, "" at least, at most
 * 8 MiB; the caller frees it). */
long thttp_get(const char *url, char **out, long timeout_s);

#endif
