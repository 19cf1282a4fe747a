/*
 * serve_retry.c - the retries of a report about the chunk in hand (its
 * start, its done) while Redis is unreachable or refuses writes (a
 * restart, maxmemory): the entry stays this worker's meanwhile, and
 * dropping the report would leave it to wait out its lease.
 */
#include "serve.h"

#include "clock.h"

#include <stdio.h>
#include <string.h>

void serve_retry_begin(struct serve_retry *r)
{
    r->t0 = clock_mono_s();
    r->tries = 0;
    r->first[0] = '\0';
}

int serve_retry_again(struct serve_retry *r, struct rq *q, const vr_err *e)
{
    if (clock_mono_s() - r->t0 > SERVE_RETRY_S)
        return 0;
    if (r->tries++ == 0) /* the cause, for the events once the report goes through */
        snprintf(r->first, sizeof r->first, "%.*s", (int)strcspn(e->msg, "\n"), e->msg);
    rq_backoff(q);
    return 1;
}
