/*
 * ctl_notify_post.c - one webhook POST: the headers, the signature, and the
 * places a POST may not go.
 *
 * Headers: Content-Type application/json, X-Vrseg-Event (job.done |
 * job.failed | job.cancelled), X-Vrseg-Delivery ("<job>:<seq>", the same at
 * every try: receivers dedupe on it), and with a secret
 *   X-Vrseg-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret,
 *                      "<t>.<delivery>.<event>.<body>")>
 * so the delivery id, the event and the time are signed with the body, and
 * a receiver that rejects an old t cannot be fed a captured POST again
 * (README.md, "Security"). Event and delivery come from a Redis record: a
 * value holding a control character (CR LF would add a header) is refused,
 * never sent.
 *
 * Where: http and https only, for the URL and for redirects (at most 3, the
 * POST kept). Every address libcurl connects to, after DNS and at every
 * redirect, passes net_addr_private first: loopback, private,
 * link-local (169.254.169.254, cloud metadata), CGNAT, multicast and
 * unspecified addresses are refused unless the controller runs with
 * --notify-allow-private, so a submitter's URL cannot reach the
 * controller's own network. What went wrong goes to the log; a submitter
 * sees only "not delivered" and the HTTP status class.
 */
#include "ctl_notify_post.h"

#include "hmac.h"
#include "net_addr.h"
#include "version.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define CTL_NOTIFY_CONNECT_MAX 5.0   /* seconds to connect, at most (--notify-timeout caps it) */
#define CTL_NOTIFY_REDIRECTS   3

/* ---- where a POST may go ---- */

/* The state of one POST that libcurl's callbacks share. */
struct ctl_post_run {
    const struct ctl_post *p;
    char refused[INET6_ADDRSTRLEN]; /* the last address refused ("" none) */
};

/* libcurl's socket opener, called for every address it connects to (after
 * DNS, for the URL and each redirect): a private one is not opened. */
static curl_socket_t ctl_notify_open(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct ctl_post_run *run = arg;
    (void)purpose;
    const struct ctl_notify_cfg *cfg = run->p->cfg;
    const struct sockaddr_in *v4 = (const struct sockaddr_in *)&a->addr;
    int test_public = cfg->test_public_port && a->family == AF_INET &&
                      ntohs(v4->sin_port) == cfg->test_public_port;
    if (!cfg->allow_private && !test_public && net_addr_private(&a->addr)) {
        net_addr_text(&a->addr, run->refused, sizeof run->refused);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

/* ---- one POST ---- */

static size_t ctl_notify_discard(char *p, size_t sz, size_t n, void *arg)
{
    (void)p, (void)arg;
    return sz * n; /* the answer's body is not read */
}

/* libcurl's progress callback: a stopping controller cuts the POST short. */
static int ctl_notify_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    const struct ctl_post_run *run = arg;
    return *run->p->stop ? 1 : 0;
}

/* 1 when v may be sent as a header value: no control character (CR, LF,
 * NUL ...), nothing outside ASCII. */
static int ctl_notify_header_ok(const char *v)
{
    for (; *v; v++)
        if ((unsigned char)*v < 0x20 || (unsigned char)*v >= 0x7f)
            return 0;
    return 1;
}

/* The X-Vrseg-Signature line into out (n bytes), or "" with no secret.
 * Returns 0, -1 when libcrypto fails. */
static int ctl_notify_sign(const struct ctl_post *p, const char *body, char *out, size_t n)
{
    out[0] = '\0';
    if (!p->cfg->secret_len)
        return 0;
    char t[24], hex[HMAC_SHA256_HEX];
    snprintf(t, sizeof t, "%lld", (long long)time(NULL));
    const struct hmac_part parts[] = {
        { t, strlen(t) }, { ".", 1 }, { p->delivery, strlen(p->delivery) }, { ".", 1 },
        { p->event, strlen(p->event) }, { ".", 1 }, { body, strlen(body) },
    };
    if (hmac_sha256_hex(p->cfg->secret, p->cfg->secret_len, parts,
                        (int)(sizeof parts / sizeof parts[0]), hex) < 0)
        return -1;
    snprintf(out, n, "X-Vrseg-Signature: t=%s,v1=%s", t, hex);
    return 0;
}

/* The request's header lines into *out (curl_slist_free_all them).
 * Returns CTL_POST_OK, or CTL_POST_REFUSED / CTL_POST_RETRY with why. */
static int ctl_notify_headers(const struct ctl_post *p, const char *body, struct curl_slist **out,
                              char *why, size_t wn)
{
    *out = NULL;
    if (!ctl_notify_header_ok(p->event) || !ctl_notify_header_ok(p->delivery)) {
        snprintf(why, wn, "refused: the delivery's event or id holds a control character "
                 "(a record written outside vrseg?)");
        return CTL_POST_REFUSED;
    }
    char h_event[64], h_delivery[128], h_sig[160];
    snprintf(h_event, sizeof h_event, "X-Vrseg-Event: %s", p->event);
    snprintf(h_delivery, sizeof h_delivery, "X-Vrseg-Delivery: %s", p->delivery);
    if (ctl_notify_sign(p, body, h_sig, sizeof h_sig) < 0) {
        snprintf(why, wn, "cannot sign: libcrypto failed");
        return CTL_POST_RETRY;
    }
    const char *lines[] = { "Content-Type: application/json", h_event, h_delivery, "Expect:",
                            h_sig[0] ? h_sig : NULL };
    struct curl_slist *hs = NULL, *t;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0] && lines[i]; i++) {
        if (!(t = curl_slist_append(hs, lines[i]))) {
            curl_slist_free_all(hs);
            snprintf(why, wn, "out of memory");
            return CTL_POST_RETRY;
        }
        hs = t;
    }
    *out = hs;
    return CTL_POST_OK;
}

/* libcurl's options for one POST of body with headers hs. */
static void ctl_notify_setopts(CURL *h, struct ctl_post_run *run, const char *url,
                               const char *body, struct curl_slist *hs, char *cerr)
{
    const struct ctl_notify_cfg *cfg = run->p->cfg;
    char ua[96]; /* copied by libcurl */
    snprintf(ua, sizeof ua, "vrseg/%s", vr_version());
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85: the _STR forms */
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, (long)CTL_NOTIFY_REDIRECTS);
    curl_easy_setopt(h, CURLOPT_POSTREDIR, (long)CURL_REDIR_POST_ALL);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, ctl_notify_open);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, run);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(h, CURLOPT_USERAGENT, ua);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(fmin(cfg->timeout_s, CTL_NOTIFY_CONNECT_MAX) * 1000));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(cfg->timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* a thread: no SIGALRM for DNS timeouts */
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, ctl_notify_discard);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, ctl_notify_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, run);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
}

int ctl_notify_post(const struct ctl_post *p, const char *url, const char *body, char *why,
                    size_t wn, long *http)
{
    *http = 0;
    vr_err ue = { 0 };
    if (job_notify_check(url, &ue) < 0) {
        snprintf(why, wn, "refused: %s", ue.msg);
        return CTL_POST_REFUSED;
    }
    struct curl_slist *hs = NULL;
    int hr = ctl_notify_headers(p, body, &hs, why, wn);
    if (hr != CTL_POST_OK)
        return hr;
    struct ctl_post_run run = { .p = p };
    char cerr[CURL_ERROR_SIZE] = "";
    ctl_notify_setopts(p->h, &run, url, body, hs, cerr);
    CURLcode rc = curl_easy_perform(p->h);
    curl_easy_getinfo(p->h, CURLINFO_RESPONSE_CODE, http);
    curl_easy_setopt(p->h, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(p->h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hs);
    if (rc == CURLE_OK && *http >= 200 && *http < 300)
        return CTL_POST_OK;
    if (rc == CURLE_OK) {
        snprintf(why, wn, "HTTP %ld", *http);
        return CTL_POST_RETRY;
    }
    if (run.refused[0]) {
        snprintf(why, wn, "refused: the address %s is loopback, private or link-local "
                 "(vr-controller --notify-allow-private allows it)", run.refused);
        return CTL_POST_REFUSED;
    }
    snprintf(why, wn, "%s", cerr[0] ? cerr : curl_easy_strerror(rc));
    switch (rc) {
    case CURLE_UNSUPPORTED_PROTOCOL: /* a redirect to ftp:, file: ... */
        snprintf(why, wn, "refused: a redirect to a scheme other than http(s) (%s)",
                 cerr[0] ? cerr : curl_easy_strerror(rc));
        return CTL_POST_REFUSED;
    case CURLE_URL_MALFORMAT:
    case CURLE_TOO_MANY_REDIRECTS:
        return CTL_POST_REFUSED;
    default:
        return CTL_POST_RETRY;
    }
}

void ctl_notify_public_why(long http, char *buf, size_t n)
{
    if (http >= 100 && http <= 599)
        snprintf(buf, n, "not delivered (HTTP %ldxx)", http / 100);
    else
        snprintf(buf, n, "not delivered");
}
