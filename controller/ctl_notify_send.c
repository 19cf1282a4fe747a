/*
 * ctl_notify_send.c - one sender per webhook receiver (see
 * ctl_notify_send.h). A receiver is its URL's scheme://host:port, so one
 * tarpit reached by many paths or tokens still gets one sender, and a
 * submitter cannot start threads by the hundred: at most CTL_SENDERS_MAX
 * senders live at once, and one that is idle (nothing queued, no POST in
 * flight) is handed to the next receiver that needs one.
 *
 * A sender's thread takes its queue's POSTs in order, each with
 * ctl_notify_post under the controller's timeout; the result goes into the
 * round and the round's hold is released. Nothing here touches Redis: the
 * delivery thread records each finished round (ctl_notify.c).
 */
#include "ctl_notify_send.h"

#include "ctl_notify_post.h"
#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CTL_SEND_KEY_MAX 320     /* scheme://host:port, lowercased */

struct ctl_send_item {
    struct ctl_round *r;
    int i;
    const char *url;              /* borrowed from the round */
};

struct ctl_sender {
    struct ctl_senders *s;
    char key[CTL_SEND_KEY_MAX];   /* the receiver ("" unused) */
    pthread_t th;
    int started;
    CURL *h;                      /* the sender's own handle (keeps its connection alive) */
    struct ctl_send_item q[CTL_SEND_QUEUE];
    int head, n;                  /* the queue (the senders' lock guards it) */
    int busy;                     /* a POST in flight */
    pthread_cond_t wake;
};

struct ctl_senders {
    struct ctl *c;
    pthread_mutex_t mu;           /* guards every queue, every round's pending, finished */
    struct ctl_sender snd[CTL_SENDERS_MAX];
    struct ctl_round *finished;
    int stopping;
};

/* ---- the receiver's key ---- */

/* scheme://host[:port] of url, lowercased, without a user or password;
 * the port is made explicit so http://h and http://h:80 are one. */
static void ctl_send_key(const char *url, char *key, size_t n)
{
    const char *sep = strstr(url, "://");
    if (!sep) {
        snprintf(key, n, "?"); /* every URL that is no URL: one sender, which refuses them */
        return;
    }
    const char *auth = sep + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', alen);
    const char *host = at ? at + 1 : auth;
    size_t hlen = (size_t)(auth + alen - host);
    int https = (size_t)(sep - url) == 5 && (url[4] == 's' || url[4] == 'S');
    int colon = 0; /* a port given: a ':' after the host (an IPv6 one ends in ']') */
    for (size_t k = hlen; k > 0 && host[k - 1] != ']' && !colon; k--)
        colon = host[k - 1] == ':';
    snprintf(key, n, "%.*s://%.*s%s", (int)(sep - url), url, (int)hlen, host,
             colon ? "" : https ? ":443" : ":80");
    for (char *p = key; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
}

/* ---- a sender's thread ---- */

static void *ctl_sender_main(void *arg)
{
    struct ctl_sender *t = arg;
    struct ctl_senders *s = t->s;
    const struct ctl_notify_cfg *cfg = &s->c->notify;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!t->n && !s->stopping) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200 * 1000000L; /* the stop flag is a signal's: looked at often */
            if (ts.tv_nsec >= 1000000000L)
                ts.tv_sec++, ts.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&t->wake, &s->mu, &ts);
            if (*s->c->stop)
                s->stopping = 1;
        }
        if (!t->n)
            break;
        struct ctl_send_item it = t->q[t->head];
        t->head = (t->head + 1) % CTL_SEND_QUEUE;
        t->n--;
        t->busy = 1;
        pthread_mutex_unlock(&s->mu);
        struct ctl_round *r = it.r;
        int res = CTL_POST_RETRY;
        long http = 0;
        char *why = r->why[it.i];
        if (s->stopping || *s->c->stop) {
            snprintf(why, CTL_SEND_WHY, "the controller stopped before this POST");
        } else if (!r->body) {
            snprintf(why, CTL_SEND_WHY, "out of memory");
        } else {
            log_ctx_thread(r->d.job, -1);
            const struct ctl_post post = { .h = t->h, .cfg = cfg, .stop = s->c->stop,
                                           .delivery = r->d.id, .event = r->event };
            res = ctl_notify_post(&post, it.url, r->body, why, CTL_SEND_WHY, &http);
            log_ctx_thread(NULL, -1);
        }
        r->result[it.i] = res;
        r->http[it.i] = http;
        pthread_mutex_lock(&s->mu);
        t->busy = 0;
        if (--r->pending == 0) {
            r->next = s->finished;
            s->finished = r;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- the pool ---- */

struct ctl_senders *ctl_senders_new(struct ctl *c)
{
    struct ctl_senders *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->c = c;
    pthread_mutex_init(&s->mu, NULL);
    for (int i = 0; i < CTL_SENDERS_MAX; i++) {
        s->snd[i].s = s;
        pthread_cond_init(&s->snd[i].wake, NULL);
    }
    return s;
}

/* The sender for key: its own, else an unused or idle one taken over
 * (started when it never was), else NULL. Under the lock. */
static struct ctl_sender *ctl_senders_for(struct ctl_senders *s, const char *key)
{
    struct ctl_sender *idle = NULL;
    for (int i = 0; i < CTL_SENDERS_MAX; i++) {
        struct ctl_sender *t = &s->snd[i];
        if (!strcmp(t->key, key))
            return t;
        if (!idle && !t->n && !t->busy)
            idle = t;
    }
    if (!idle)
        return NULL;
    if (!idle->started) {
        if (!idle->h && !(idle->h = curl_easy_init()))
            return NULL;
        if (pthread_create(&idle->th, NULL, ctl_sender_main, idle) != 0)
            return NULL;
        idle->started = 1;
    }
    snprintf(idle->key, sizeof idle->key, "%s", key);
    return idle;
}

int ctl_senders_push(struct ctl_senders *s, struct ctl_round *r, int i, const char *url)
{
    char key[CTL_SEND_KEY_MAX];
    ctl_send_key(url, key, sizeof key);
    pthread_mutex_lock(&s->mu);
    struct ctl_sender *t = s->stopping ? NULL : ctl_senders_for(s, key);
    int rc = -1;
    if (t && t->n < CTL_SEND_QUEUE) {
        t->q[(t->head + t->n) % CTL_SEND_QUEUE] = (struct ctl_send_item){ r, i, url };
        t->n++;
        r->pending++;
        pthread_cond_signal(&t->wake);
        rc = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void ctl_senders_release(struct ctl_senders *s, struct ctl_round *r)
{
    pthread_mutex_lock(&s->mu);
    if (--r->pending == 0) {
        r->next = s->finished;
        s->finished = r;
    }
    pthread_mutex_unlock(&s->mu);
}

struct ctl_round *ctl_senders_finished(struct ctl_senders *s)
{
    pthread_mutex_lock(&s->mu);
    struct ctl_round *f = s->finished;
    s->finished = NULL;
    pthread_mutex_unlock(&s->mu);
    return f;
}

void ctl_senders_free(struct ctl_senders **sp, struct ctl_round **finished)
{
    struct ctl_senders *s = sp ? *sp : NULL;
    if (finished)
        *finished = NULL;
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    for (int i = 0; i < CTL_SENDERS_MAX; i++)
        pthread_cond_signal(&s->snd[i].wake);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < CTL_SENDERS_MAX; i++) {
        struct ctl_sender *t = &s->snd[i];
        if (t->started)
            pthread_join(t->th, NULL);
        if (t->h)
            curl_easy_cleanup(t->h);
        pthread_cond_destroy(&t->wake);
    }
    struct ctl_round *f = s->finished;
    if (finished) {
        *finished = f;
    } else {
        while (f) {
            struct ctl_round *next = f->next;
            free(f->body);
            free(f);
            f = next;
        }
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
    *sp = NULL;
}
