/*
 * serve_start.c - a delivered entry checked against its chunk record and
 * reported started, retried while Redis is unreachable or refuses writes.
 * Under maxmemory Redis lets the read that delivers the entry through
 * (XREADGROUP is no write it refuses) and refuses the start report (XADD):
 * given up at once, the entry stayed pending under a claim no report would
 * show again, the worker read the next one alike, and each waited out its
 * lease (chaos_redis/maxmemory_oom_at_delivery).
 */
#include "serve.h"

#include "log.h"

int serve_start(struct serve *s, const struct rq_held *h, struct rq_start *st, char *why,
                size_t whyn, vr_err *err)
{
    struct serve_retry r;
    serve_retry_begin(&r);
    for (;;) {
        /* again at each try: the chunk may have been reclaimed or its job
         * ended meanwhile (a Redis away for longer than the lease) */
        int rc = rq_chunk_peek(s->q, h, st, why, whyn, err);
        if (rc == RQ_HELD_LOST || rc == RQ_HELD_JOB_ENDED)
            return rc;
        int sent = rc;
        if (rc >= 0 || err->code == VR_EFORMAT) {
            /* a task that cannot be read is reported started too: the chunk
             * then fails at once instead of running to its lease */
            vr_err se = { 0 };
            sent = rq_report_start(s->q, h, &se);
            if (sent == 0) {
                if (r.tries > 0)
                    log_info("job %s chunk %d: start reported on try %d", h->job, h->idx,
                             r.tries + 1);
                return rc < 0 ? VR_EFORMAT : RQ_HELD_YES;
            }
            *err = se;
        }
        int retry = err->code == VR_EREDIS; /* not an ACL denial or a malformed reply */
        if (r.tries == 0)
            log_warn("job %s chunk %d: cannot start: %s%s", h->job, h->idx, err->msg,
                     retry ? "; retrying: the entry is this worker's until its lease lapses"
                           : "");
        if (!retry || !serve_retry_again(&r, s->q, err)) {
            if (r.tries > 0)
                log_error("job %s chunk %d: cannot start, gave up after %d tries: %s; its entry "
                          "waits out its lease", h->job, h->idx, r.tries + 1, err->msg);
            /* VR_EFORMAT tells the caller "reported started, unreadable":
             * a report that never went through is not that */
            return sent == VR_EFORMAT ? VR_EREDIS : sent;
        }
    }
}
