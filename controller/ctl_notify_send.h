/*
 * ctl_notify_send.h - the webhook senders (private to controller/: the
 * delivery thread in ctl_notify.c hands them its POSTs). One sender per
 * receiver (its URL's scheme://host:port), each a thread of its own with
 * its own libcurl handle and a queue of at most CTL_SEND_QUEUE POSTs, so a
 * receiver that accepts and never answers (a tarpit) holds up only its own
 * POSTs, never another receiver's nor the controller's loop (issue 41,
 * finding 6). A POST that finds its sender's queue full, or no sender free
 * (CTL_SENDERS_MAX receivers busy at once), is not queued: its URL is tried
 * again at the delivery's next round.
 */
#ifndef VR_CTL_NOTIFY_SEND_H
#define VR_CTL_NOTIFY_SEND_H

#include "ctl.h"
#include "rq_notify.h"

#define CTL_SEND_QUEUE   8    /* POSTs waiting for one receiver, at most */
#define CTL_SENDERS_MAX  16   /* receivers with a sender at once */
#define CTL_SEND_WHY     (256 + 160)

/* One round of a delivery: its POSTs go out through the senders of its
 * URLs at once, and the round is finished when the last one is back. */
struct ctl_round {
    struct rq_notify d;           /* the delivery as claimed */
    char *body;                   /* the event (malloc'd; NULL: out of memory) */
    char event[32];               /* "job.<state>" */
    int pending;                  /* holds: POSTs still out, + 1 while the delivery
                                   * thread pushes (the senders' lock guards it) */
    int result[RQ_NOTIFY_MAX_URLS]; /* CTL_POST_* of URL i; CTL_SEND_NONE: not sent */
    long http[RQ_NOTIFY_MAX_URLS];  /* URL i's HTTP status (0: no answer) */
    char why[RQ_NOTIFY_MAX_URLS][CTL_SEND_WHY]; /* URL i's failure in detail (log only) */
    struct ctl_round *next;       /* in the finished list, or the delivery thread's own */
};

enum { CTL_SEND_NONE = 2 };       /* a result beside CTL_POST_OK/RETRY/REFUSED */

struct ctl_senders;

/* Senders for the controller c (its webhook config, its stop flag; c
 * outlives them). Threads start as receivers come. NULL: out of memory. */
struct ctl_senders *ctl_senders_new(struct ctl *c);

/* Queues the POST of round r's event to URL i (`url`, borrowed until the
 * round is finished) on its receiver's sender. 0 queued (the round's
 * `pending` counted up), -1 when the sender's queue is full or no
 * sender is free (nothing queued; the caller counts and logs the drop). */
int ctl_senders_push(struct ctl_senders *s, struct ctl_round *r, int i, const char *url);

/* Drops one hold on round r: a sender's when its POST is back, or the
 * delivery thread's own (it holds the round while it pushes: pending
 * starts at 1). The last one puts r in the finished list. */
void ctl_senders_release(struct ctl_senders *s, struct ctl_round *r);

/* Takes the finished rounds (a list through `next`, the caller's from now
 * on; NULL none). */
struct ctl_round *ctl_senders_finished(struct ctl_senders *s);

/* Stops every sender (a POST in flight is cut short by c's stop flag, the
 * queued ones come back as CTL_POST_RETRY unsent), joins them and frees;
 * the rounds not taken yet go to *finished (NULL: freed with their body).
 * Accepts NULL and clears the pointer. */
void ctl_senders_free(struct ctl_senders **s, struct ctl_round **finished);

#endif
