/*
 * t-queue-claim.c - claims and reports (queue/rq_claim.h): a claim's token
 * and proof open its own consumer's commitment and no other's, the proof
 * cannot stand in for the token; a claim key releases only its own
 * worker's claims; a report read back is bounded and checked field by
 * field; and against a real redis-server, a worker's claim, peek and skip,
 * and the sweep of spent consumers that leaves a holding one alone.
 */
#include "rq.h"
#include "rq_claim.h"
#include "rq_fleet.h"
#include "util-queue.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct rq_claim claim_of(const char *name, const char *key, long long k)
{
    struct rq_claim c;
    vr_err e = { 0 };
    cr_assert_eq(rq_claim_make(name, key, k, &c, &e), 0, "%s", e.msg);
    return c;
}

Test(queue_claim, a_claim_opens_its_own_commitment_only)
{
    char key[RQ_CLAIM_KEY_HEX], other[RQ_CLAIM_KEY_HEX];
    vr_err e = { 0 };
    cr_assert_eq(rq_claim_key_new(key, &e), 0);
    cr_assert_eq(rq_claim_key_new(other, &e), 0);
    cr_assert(rq_claim_key_valid(key) && strcmp(key, other));
    struct rq_claim a = claim_of("box:cpu:1a2b3c4d", key, 7);
    struct rq_claim b = claim_of("box:cpu:1a2b3c4d", key, 8);
    struct rq_claim x = claim_of("box:cpu:1a2b3c4d", other, 7);
    cr_assert(!strncmp(a.consumer, "box:cpu:1a2b3c4d+7+", 19), "%s", a.consumer);
    cr_assert_eq(strlen(a.consumer), 19 + RQ_CLAIM_C_HEX);
    /* the same key and k give the same claim: a restarted read keeps it */
    struct rq_claim a2 = claim_of("box:cpu:1a2b3c4d", key, 7);
    cr_assert_str_eq(a.consumer, a2.consumer);
    cr_assert(rq_claim_proves(a.consumer, a.token, RQ_SHOWN_TOKEN));
    cr_assert(rq_claim_proves(a.consumer, a.proof, RQ_SHOWN_PROOF));
    /* the proof is not the token, nor the token the proof */
    cr_assert_not(rq_claim_proves(a.consumer, a.proof, RQ_SHOWN_TOKEN));
    cr_assert_not(rq_claim_proves(a.consumer, a.token, RQ_SHOWN_PROOF));
    /* another claim's secrets, of the same worker or another key */
    cr_assert_not(rq_claim_proves(a.consumer, b.token, RQ_SHOWN_TOKEN));
    cr_assert_not(rq_claim_proves(a.consumer, x.token, RQ_SHOWN_TOKEN));
    cr_assert_not(rq_claim_proves(a.consumer, x.proof, RQ_SHOWN_PROOF));
    /* a name changed around the same commitment still needs its secret */
    char renamed[RQ_CONSUMER_MAX];
    snprintf(renamed, sizeof renamed, "evil%s", strchr(a.consumer, '+'));
    cr_assert(rq_claim_proves(renamed, a.token, RQ_SHOWN_TOKEN)); /* C alone is checked */
    cr_assert_not(rq_claim_of_key(renamed, "box:cpu:1a2b3c4d", key));
    /* malformed consumers and secrets */
    cr_assert_not(rq_claim_proves("box:cpu:1", a.token, RQ_SHOWN_TOKEN));
    cr_assert_not(rq_claim_proves("box+x+00", a.token, RQ_SHOWN_TOKEN));
    cr_assert_not(rq_claim_proves(a.consumer, "", RQ_SHOWN_TOKEN));
    cr_assert_not(rq_claim_proves(a.consumer, "zz", RQ_SHOWN_TOKEN));
    /* the key proves its worker's claims, no one else's */
    cr_assert(rq_claim_of_key(a.consumer, "box:cpu:1a2b3c4d", key));
    cr_assert(rq_claim_of_key(b.consumer, "box:cpu:1a2b3c4d", key));
    cr_assert_not(rq_claim_of_key(x.consumer, "box:cpu:1a2b3c4d", key));
    cr_assert_not(rq_claim_of_key(a.consumer, "box:cpu:9", key));
    cr_assert_not(rq_claim_of_key(a.consumer, "box:cpu:1a2b3c4d", "nothex"));
    char name[128];
    rq_consumer_worker(a.consumer, name, sizeof name);
    cr_assert_str_eq(name, "box:cpu:1a2b3c4d");
    /* bad names and keys make no claim */
    struct rq_claim c;
    cr_assert_lt(rq_claim_make("a+b", key, 0, &c, &e), 0);
    cr_assert_lt(rq_claim_make("", key, 0, &c, &e), 0);
    cr_assert_lt(rq_claim_make("ok", "abc", 0, &c, &e), 0);
}

/* A report as Redis would hand it back: field/value pairs. */
static void msg_of(struct rq_msg *m, const char *const *kv)
{
    memset(m, 0, sizeof *m);
    snprintf(m->stream, sizeof m->stream, "%s", RQ_REPORTS);
    snprintf(m->id, sizeof m->id, "1-1");
    for (int i = 0; kv[i] && m->nfields < RQ_MAX_FIELDS; i += 2) {
        m->key[m->nfields] = kv[i];
        m->val[m->nfields++] = kv[i + 1];
    }
}

Test(queue_claim, a_report_read_back_is_checked_field_by_field)
{
    char key[RQ_CLAIM_KEY_HEX];
    cr_assert_eq(rq_claim_key_new(key, NULL), 0);
    struct rq_claim a = claim_of("w1", key, 0);
    struct rq_msg m;
    struct rq_report r;
    vr_err e = { 0 };
    const char *done[] = { "kind", "done", "consumer", a.consumer, "stream", RQ_CHUNKS,
                           "entry", "12-0", "job", "20261127-000000-00000000", "idx", "3",
                           "token", a.token, "frames", "25", "fps", "12.5", "metrics", "{}",
                           "sum", "", "note", "", NULL };
    msg_of(&m, done);
    cr_assert_eq(rq_report_parse(&m, &r, &e), 0, "%s", e.msg);
    cr_assert(r.idx == 3 && r.frames == 25 && r.fps == 12.5);
    cr_assert(rq_report_proves(&r));
    /* one bad field at a time */
    static const struct { const char *field, *value, *why; } bad[] = {
        { "kind", "commit", "unknown kind" },       { "stream", "vr:jobs", "not a chunk stream" },
        { "entry", "1-1' or", "bad entry id" },     { "job", "../x", "bad job or chunk index" },
        { "idx", "-1", "bad job or chunk index" },  { "idx", "100000", "bad job or chunk index" },
        { "frames", "-5", "bad frame count" },      { "frames", "1e3", "bad frame count" },
        { "fps", "nan", "bad fps" },                { "fps", "1e99", "bad fps" },
        { "sum", "md5:00", "bad output sum" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *kv[32];
        int n = 0;
        for (int j = 0; done[j]; j += 2) {
            kv[n++] = done[j];
            kv[n++] = !strcmp(done[j], bad[i].field) ? bad[i].value : done[j + 1];
        }
        kv[n] = NULL;
        msg_of(&m, kv);
        cr_assert_lt(rq_report_parse(&m, &r, &e), 0, "%s=%s passed", bad[i].field, bad[i].value);
        cr_assert(strstr(e.msg, bad[i].why), "%s=%s: %s", bad[i].field, bad[i].value, e.msg);
    }
    /* a long reason is refused, not cut */
    char reason[1100];
    memset(reason, 'x', sizeof reason - 1);
    reason[sizeof reason - 1] = '\0';
    const char *fail[] = { "kind", "fail", "consumer", a.consumer, "stream", RQ_CHUNKS,
                           "entry", "12-0", "job", "20261127-000000-00000000", "idx", "3",
                           "token", a.token, "reason", reason, NULL };
    msg_of(&m, fail);
    cr_assert_lt(rq_report_parse(&m, &r, &e), 0);
    /* a proof where the kind shows a token does not prove it */
    const char *shown[] = { "kind", "fail", "consumer", a.consumer, "stream", RQ_CHUNKS,
                            "entry", "12-0", "job", "20261127-000000-00000000", "idx", "3",
                            "token", a.proof, "reason", "x", NULL };
    msg_of(&m, shown);
    cr_assert_eq(rq_report_parse(&m, &r, &e), 0, "%s", e.msg);
    cr_assert_not(rq_report_proves(&r));
    /* a died report names a worker and shows a key */
    const char *died[] = { "kind", "died", "worker", "w1", "key", key, "reason", "killed", NULL };
    msg_of(&m, died);
    cr_assert_eq(rq_report_parse(&m, &r, &e), 0, "%s", e.msg);
    cr_assert(rq_report_proves(&r));
    const char *died_bad[] = { "kind", "died", "worker", "w1\r\nX: 1", "key", key, NULL };
    msg_of(&m, died_bad);
    cr_assert_lt(rq_report_parse(&m, &r, &e), 0);
}

/* ---- against a real Redis ---- */

static struct tredis T;
static struct rq *Q;

static void setup(void)
{
    tqueue_start(&T, 0, &Q, 2);
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 3, 0, &e), 1, "%s", e.msg);
    cr_assert_eq(rq_chunk_create(Q, "j1", 1, "{}", 3, 0, &e), 1, "%s", e.msg);
}

static void teardown(void)
{
    rq_free(&Q);
    tredis_stop(&T);
}

/* Reads the next chunk entry under claim c into *h, as a worker does: the
 * priority stream (where a chunk tried again goes) first. */
static void take(const struct rq_claim *c, struct rq_held *h)
{
    const char *hi[] = { RQ_CHUNKS_HI }, *normal[] = { RQ_CHUNKS };
    struct rq_msg m;
    vr_err e = { 0 };
    int rc = rq_read(Q, RQ_G_WORKERS, c->consumer, hi, 1, 0, &m, &e);
    if (rc == 0)
        rc = rq_read(Q, RQ_G_WORKERS, c->consumer, normal, 1, 0, &m, &e);
    cr_assert_eq(rc, 1, "%s", e.msg);
    memset(h, 0, sizeof *h);
    snprintf(h->stream, sizeof h->stream, "%s", m.stream);
    snprintf(h->id, sizeof h->id, "%s", m.id);
    snprintf(h->job, sizeof h->job, "%s", rq_msg_get(&m, "job"));
    h->idx = atoi(rq_msg_get(&m, "idx"));
    h->claim = *c;
    rq_msg_release(&m);
}

static long long consumers(const char *stream)
{
    vr_err e = { 0 };
    redisReply *r = rq_cmd(Q, &e, "XINFO CONSUMERS %s %s", stream, RQ_G_WORKERS);
    cr_assert_not_null(r, "%s", e.msg);
    long long n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}

Test(queue_claim, the_holder_commits_a_key_releases_only_its_claims_spent_ones_are_swept,
     .init = setup, .fini = teardown)
{
    char key[RQ_CLAIM_KEY_HEX], other[RQ_CLAIM_KEY_HEX];
    cr_assert_eq(rq_claim_key_new(key, NULL), 0);
    cr_assert_eq(rq_claim_key_new(other, NULL), 0);
    struct rq_claim a = claim_of("w1", key, 0), b = claim_of("w1", key, 1);
    struct rq_held h0, h1;
    take(&a, &h0);
    take(&b, &h1);
    struct rq_start *st = calloc(1, sizeof *st);
    char why[64];
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_peek(Q, &h0, st, why, sizeof why, &e), RQ_HELD_YES, "%s", e.msg);
    cr_assert_eq(st->attempt, 1);
    cr_assert_str_eq(st->task, "{}");
    free(st);
    /* the controller's scripts under the holding consumer: start, commit */
    struct rq_start st2;
    cr_assert_eq(rq_chunk_start(Q, h0.stream, a.consumer, h0.id, "j1", 0, &st2, why, sizeof why,
                                &e), 1, "%s", e.msg);
    char worker[32] = "";
    rq_hget(Q, "vr:chunk:j1:0", "worker", worker, sizeof worker, NULL);
    cr_assert_str_eq(worker, "w1", "the record names the worker, not its claim");
    /* another claim of the same worker does not hold entry 0 */
    cr_assert_eq(rq_chunk_commit(Q, h0.stream, b.consumer, h0.id, "j1", 0, 5, 1, "{}", NULL, &e),
                 0);
    cr_assert_eq(rq_chunk_commit(Q, h0.stream, a.consumer, h0.id, "j1", 0, 5, 1, "{}", NULL, &e),
                 1, "%s", e.msg);
    cr_assert_eq(rq_chunk_peek(Q, &h0, NULL, why, sizeof why, &e), RQ_HELD_LOST);
    cr_assert_str_eq(why, "chunk already done");
    /* a key that made no claim of w1 releases nothing; w1's own does */
    cr_assert_eq(rq_worker_died(Q, "w1", other, "forged", &e), 0);
    cr_assert_eq(rq_worker_died(Q, "w1", key, "worker w1 killed", &e), 1, "%s", e.msg);
    cr_assert_eq(rq_chunk_peek(Q, &h1, NULL, why, sizeof why, &e), RQ_HELD_LOST,
                 "chunk 1's entry was not replaced");
    /* a skip of a stale entry: acked only by its holder (none now) */
    cr_assert_eq(rq_chunk_skip(Q, h1.stream, b.consumer, h1.id, "j1", 1, &e), 0);
    /* spent consumers go; one holding an entry stays however idle */
    struct rq_claim c = claim_of("w2", key, 0);
    struct rq_held h2;
    take(&c, &h2); /* chunk 1 again, from the priority stream */
    cr_assert_str_eq(h2.stream, RQ_CHUNKS_HI);
    cr_assert_eq(consumers(RQ_CHUNKS), 3); /* a, b and the reclaimer, all spent */
    cr_assert_eq(rq_consumers_sweep(Q, RQ_CHUNKS, 0, &e), 3, "%s", e.msg);
    cr_assert_eq(consumers(RQ_CHUNKS), 0);
    cr_assert_eq(rq_consumers_sweep(Q, RQ_CHUNKS_HI, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(consumers(RQ_CHUNKS_HI), 1);
    cr_assert_eq(rq_chunk_peek(Q, &h2, NULL, why, sizeof why, &e), RQ_HELD_YES);
    cr_assert_eq(rq_chunk_commit(Q, h2.stream, c.consumer, h2.id, "j1", 1, 5, 1, "{}", NULL, &e),
                 1, "%s", e.msg);
}

static long long attempts_of(int idx)
{
    char ck[64];
    long long v = -1;
    snprintf(ck, sizeof ck, "vr:chunk:j1:%d", idx);
    cr_assert_geq(rq_hget_ll(Q, ck, "attempts", &v, NULL), 0);
    return v;
}

/* A start report read by a controller that died before handling it is
 * handled late, or never: the attempt is counted once all the same, by
 * whichever of start, commit or failure comes first. */
Test(queue_claim, an_attempt_counts_once_whichever_report_comes_first, .init = setup,
     .fini = teardown)
{
    char key[RQ_CLAIM_KEY_HEX], why[64];
    cr_assert_eq(rq_claim_key_new(key, NULL), 0);
    struct rq_claim a = claim_of("w1", key, 0), b = claim_of("w1", key, 1);
    struct rq_held h0, h1;
    struct rq_start st;
    vr_err e = { 0 };
    take(&a, &h0);
    take(&b, &h1);
    /* chunk 0: its start lost, the commit counts the attempt; the start
     * handled afterwards counts nothing */
    cr_assert_eq(rq_chunk_commit(Q, h0.stream, a.consumer, h0.id, "j1", h0.idx, 5, 1, "{}", NULL,
                                 &e), 1, "%s", e.msg);
    cr_assert_eq(attempts_of(h0.idx), 1);
    cr_assert_eq(rq_chunk_start(Q, h0.stream, a.consumer, h0.id, "j1", h0.idx, &st, why,
                                sizeof why, &e), 0);
    cr_assert_eq(attempts_of(h0.idx), 1);
    /* chunk 1: its start handled twice, then its failure: one attempt */
    for (int i = 0; i < 2; i++)
        cr_assert_eq(rq_chunk_start(Q, h1.stream, b.consumer, h1.id, "j1", h1.idx, &st, why,
                                    sizeof why, &e), 1, "%s", e.msg);
    cr_assert_eq(st.attempt, 1);
    cr_assert_eq(rq_chunk_fail(Q, h1.stream, b.consumer, h1.id, "j1", h1.idx, "EIO", 0, &e), 1,
                 "%s", e.msg);
    cr_assert_eq(attempts_of(h1.idx), 1);
}
