/*
 * t-queue-notes.c - a job's notes written together: rq_job_notes sets
 * several fields of the job record in one round trip (a job's start and
 * its plan write theirs so), and refuses the whole call when one field is
 * one only a script may change.
 */
#include "rq_jobs.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <string.h>

Test(queue_notes, several_fields_in_one_round_trip)
{
    struct tredis r;
    cr_assert_eq(tredis_start(&r, 0), 0);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(r.url, 5000, &q, &e), 0, "%s", e.msg);
    const char *fields[] = { "started_ms", "chunk_ms", "chunk_wave", "layout" };
    const char *values[] = { "1795300000000", "4000", "3", "sbs" };
    long long before = rq_round_trips(q);
    cr_assert_eq(rq_job_notes(q, "job-a", fields, values, 4, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_round_trips(q) - before, 1, "the notes took %lld round trips",
                 rq_round_trips(q) - before);
    long long v = 0;
    cr_assert_eq(rq_job_number(q, "job-a", "chunk_ms", &v, &e), 1, "%s", e.msg);
    cr_assert_eq(v, 4000);
    cr_assert_eq(rq_job_number(q, "job-a", "chunk_wave", &v, &e), 1, "%s", e.msg);
    cr_assert_eq(v, 3);
    char key[128], layout[16] = "";
    rq_key_job(key, sizeof key, "job-a");
    cr_assert_eq(rq_hget(q, key, "layout", layout, sizeof layout, &e), 1, "%s", e.msg);
    cr_assert_str_eq(layout, "sbs");
    /* one scripted field refuses the whole call: nothing is written */
    const char *bad[] = { "piece_ms", "state" };
    const char *bv[] = { "500", "done" };
    cr_assert_eq(rq_job_notes(q, "job-b", bad, bv, 2, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "'state'"), "%s", e.msg);
    rq_key_job(key, sizeof key, "job-b");
    cr_assert_eq(rq_hget(q, key, "piece_ms", layout, sizeof layout, NULL), 0,
                 "a refused call wrote piece_ms");
    rq_free(&q);
    tredis_stop(&r);
}
