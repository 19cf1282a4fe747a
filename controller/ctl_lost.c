/*
 * ctl_lost.c - a live job whose record lost its state (ctl.h,
 * ctl_lost_job): said once at error level with its likely cause. A leaf:
 * the audit and the stitch sweep both call it.
 */
#include "ctl.h"

#include "log.h"
#include "rq_jobs.h"
#include "vr_err.h"

void ctl_lost_job(struct ctl *c, const char *id)
{
    char spec[64] = "";
    int rc = rq_job_spec(c->q, id, spec, sizeof spec, NULL);
    int half = rc > 0 || rc == VR_EFORMAT; /* VR_EFORMAT: longer than read here */
    log_error("job %s: its record in Redis is %s (no state): Redis lost writes, as a "
              "restart does that refuses its own AOF (Redis <= 7.0.15 under a bare "
              "'user default off': see README.md, Security, and deploy/check-redis.sh); "
              "the job cannot go on: submit it again", id, half ? "half-written" : "gone");
}
