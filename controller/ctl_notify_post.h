/*
 * ctl_notify_post.h - one webhook POST (private to controller/: the
 * delivery thread in ctl_notify.c calls it). What it sends, signs and
 * refuses is told in ctl_notify_post.c.
 */
#ifndef VR_CTL_NOTIFY_POST_H
#define VR_CTL_NOTIFY_POST_H

#include "ctl.h"

#include <curl/curl.h>

enum { CTL_POST_OK = 1, CTL_POST_RETRY = 0, CTL_POST_REFUSED = -1 };

/* What one POST carries; every pointer borrowed for the call. */
struct ctl_post {
    CURL *h;                          /* the thread's handle (reset here) */
    const struct ctl_notify_cfg *cfg; /* secret, timeout, --notify-allow-private */
    const volatile sig_atomic_t *stop; /* a stopping controller cuts the POST short */
    const char *delivery;             /* X-Vrseg-Delivery, from Redis */
    const char *event;                /* X-Vrseg-Event ("job.<state>"), from Redis */
};

/* POSTs body to url. CTL_POST_OK on a 2xx, CTL_POST_REFUSED when trying
 * again cannot help (a bad URL, a header value with a control character, a
 * private address, a redirect to another scheme), else CTL_POST_RETRY. why
 * (wn bytes) says what went wrong in detail, for the controller's log
 * only; *http is the answer's HTTP status (0: none). */
int ctl_notify_post(const struct ctl_post *p, const char *url, const char *body, char *why,
                    size_t wn, long *http);

/* What a submitter may see of a failed POST (notify_error, the job's
 * events): "not delivered", with the HTTP status class when there was an
 * answer ("not delivered (HTTP 5xx)"); never the detail, which would make
 * the webhook a probe of the controller's network. */
void ctl_notify_public_why(long http, char *buf, size_t n);

#endif
