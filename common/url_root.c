/*
 * url_root.c - URLs allowed by prefix roots (url_root.h).
 */
#include "url_root.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

int url_root_is_url(const char *s)
{
    return s && (!strncasecmp(s, "http://", 7) || !strncasecmp(s, "https://", 8) ||
                 !strncmp(s, "s3://", 5));
}

/* 1 when s holds only printable ASCII, no space. */
static int url_printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
            return 0;
    return 1;
}

int url_root_norm(const char *root, char *out, size_t n, vr_err *err)
{
    const char *host = strstr(root, "://");
    size_t len = strlen(root);
    const char *at = host ? memchr(host + 3, '@', strcspn(host + 3, "/")) : NULL;
    if (at) /* said without what comes before the '@': a password is never echoed */
        return vr_err_set(err, VR_EINVAL, "root %.*s://...%.200s: no user info (credentials "
                          "never travel in a URL)", (int)(host - root), root, at);
    if (!url_root_is_url(root) || !host || !host[3] || host[3] == '/' || !url_printable(root) ||
        strpbrk(root, "?#\\") || memchr(host + 3, '@', strcspn(host + 3, "/")))
        return vr_err_set(err, VR_EINVAL, "root %.200s: want http(s)://host/path/ or "
                          "s3://bucket/prefix/ (no user info, query or fragment)", root);
    if (len + 2 > n || len + 2 > URL_ROOT_MAX)
        return vr_err_set(err, VR_EINVAL, "root %.200s: too long", root);
    snprintf(out, n, "%s%s", root, root[len - 1] == '/' ? "" : "/");
    return 0;
}

/* 1 when the path part p (up to '?' or its end) holds a "." or ".."
 * segment, an encoded dot or slash, or a backslash. */
static int url_path_bad(const char *p)
{
    size_t end = strcspn(p, "?");
    for (size_t i = 0; i < end; i++) {
        if (p[i] == '\\')
            return 1;
        if (p[i] == '%' && i + 2 < end + 1 && p[i + 1] == '2' &&
            strchr("eEfF", p[i + 2]))
            return 1;
        if ((i == 0 || p[i - 1] == '/') && p[i] == '.') {
            size_t k = i + (p[i + 1] == '.' ? 2 : 1);
            if (k >= end || p[k] == '/')
                return 1;
        }
    }
    return 0;
}

int url_root_plain(const char *url, vr_err *err)
{
    if (!url_printable(url) || strchr(url, '#'))
        return vr_err_set(err, VR_EINVAL, "%.300s: a URL of printable ASCII without "
                          "spaces or a fragment, please (percent-encode)", url);
    const char *host = strstr(url, "://");
    if (host && memchr(host + 3, '@', strcspn(host + 3, "/?")))
        return vr_err_set(err, VR_EINVAL, "a URL with user info: credentials in a job's URL "
                          "is refused: credentials are the fleet's, never a job's (README, "
                          "\"A fleet without shared storage\")");
    return 0;
}

int url_root_check(const char *url, const char *root, const char *opt, vr_err *err)
{
    int rc = url_root_plain(url, err);
    if (rc < 0)
        return rc;
    size_t rl = strlen(root);
    const char *what = strstr(opt, "output-root") ? "output" : "input";
    if (!rl || strncmp(url, root, rl) || !url[rl] || url[rl] == '?')
        return vr_err_set(err, VR_EINVAL, "%s %.300s is not under a URL root %s (%s "
                          "https://host/prefix/ allows one)", what, url,
                          rl ? root : "(none set)", opt);
    if (url_path_bad(url + rl))
        return vr_err_set(err, VR_EINVAL, "%s %.300s: a '.' or '..' segment, an encoded "
                          "dot or slash or a backslash after the root %s", what, url, root);
    return 0;
}
