/*
 * t-dist-sec-lease.c - a worker's user cannot keep chunks past their lease
 * (issue 41, finding 7), against a real redis-server under
 * deploy/redis-users.acl and a controller (lease 5 s) as its own user; the
 * attacker sends XREADGROUP by hand, as the worker's user may:
 *
 * - an entry re-read (ID 0) every 300 ms under its claim, from another
 *   connection (a dead worker's consumer name, impersonated), is taken
 *   back when its lease lapses: the lease is the chunk record's, stamped
 *   by the controller, not the stream's idle time (before: held for good);
 * - an entry read with NOACK (delivered, pending to no one) is enqueued
 *   again, the chunk saying why, and the job completes with a real worker
 *   (before: left until a trim dropped the entry and an audit noticed);
 * - COUNT 3 under one claim: the two extra entries are taken back at once,
 *   saying why (before: all three held for the whole lease).
 */
#include "clock.h"
#include "rq.h"
#include "util-acl.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tdist D;
static struct tacl A;
static struct rq *Q; /* admin */

static void teardown(void)
{
    tacl_down(&D, &Q);
}

TestSuite(dist_sec_lease, .fini = teardown, .timeout = 240);

/* What the attacker was delivered. */
struct took {
    char id[RQ_ID_MAX];
    char job[64];
    int idx;
};

/* A consumer name shaped as a worker's claim (rq_claim.h). */
#define EVIL "evil-worker+1+0123456789abcdef0123456789abcdef"

/* A controller, and a job of 4 chunks queued for no worker; its id. */
static void queued_job(char *id, size_t n)
{
    Q = tacl_up(&D, &A);
    cr_assert_gt(tacl_controller(&D, &A, NULL), 0);
    char in[400], out[400], total[32] = "";
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 4, 96, 5, 0), 0);
    const char *opt[] = { "--chunk-seconds", "1", NULL };
    cr_assert_eq(tacl_submit(&A, in, out, opt, id, n), 0, "submit: %s", id);
    long long queued = 0;
    for (int t = 0; t < 60000 && queued < 3; t += 100) {
        tmsleep(100);
        redisReply *r = rq_cmd(Q, NULL, "XLEN vr:chunks");
        queued = r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
        freeReplyObject(r);
    }
    tacl_job_field(Q, id, "chunks_total", total, sizeof total);
    cr_assert(queued >= 3 && atoi(total) >= 3, "job %s: %lld entries, %s chunks", id, queued,
              total);
}

/* XREADGROUP as the worker's user on w: COUNT count, NOACK or not; `from`
 * ">" (new entries) or "0" (re-read its own). Up to max entries into t;
 * their count. */
static int take(struct rq *w, const char *consumer, int count, int noack, const char *from,
                struct took *t, int max)
{
    vr_err e = { 0 };
    redisReply *r = noack ? rq_cmd(w, &e, "XREADGROUP GROUP workers %s COUNT %d NOACK STREAMS "
                                   "vr:chunks %s", consumer, count, from)
                          : rq_cmd(w, &e, "XREADGROUP GROUP workers %s COUNT %d STREAMS "
                                   "vr:chunks %s", consumer, count, from);
    cr_assert_not_null(r, "the worker's user may XREADGROUP: %s", e.msg);
    int n = 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
        const redisReply *es = r->element[0]->element[1];
        for (size_t i = 0; i < es->elements && n < max; i++, n++) {
            const redisReply *x = es->element[i];
            snprintf(t[n].id, sizeof t[n].id, "%s", x->element[0]->str);
            const redisReply *f = x->element[1];
            for (size_t k = 0; k + 1 < f->elements; k += 2) {
                if (!strcmp(f->element[k]->str, "job"))
                    snprintf(t[n].job, sizeof t[n].job, "%s", f->element[k + 1]->str);
                else if (!strcmp(f->element[k]->str, "idx"))
                    t[n].idx = atoi(f->element[k + 1]->str);
            }
        }
    }
    freeReplyObject(r);
    return n;
}

static void chunk_field(const struct took *t, const char *field, char *out, size_t n)
{
    char ck[160];
    rq_key_chunk(ck, sizeof ck, t->job, t->idx);
    out[0] = '\0';
    rq_hget(Q, ck, field, out, n, NULL);
}

Test(dist_sec_lease, an_entry_re_read_under_its_claim_is_taken_back_when_the_lease_lapses)
{
    char id[64];
    queued_job(id, sizeof id);
    struct rq *dead = tacl_as_worker(&A);
    struct took t;
    cr_assert_eq(take(dead, EVIL, 1, 0, ">", &t, 1), 1);
    rq_free(&dead); /* its worker is gone; another connection keeps its name */
    struct rq *w = tacl_as_worker(&A);
    double t0 = clock_mono_s();
    char entry[64] = "";
    for (int i = 0; i < 100; i++) { /* 30 s: six leases */
        struct took again;
        take(w, EVIL, 10, 0, "0", &again, 1); /* its idle time back to 0 */
        chunk_field(&t, "entry", entry, sizeof entry);
        if (strcmp(entry, t.id))
            break;
        tmsleep(300);
    }
    double held = clock_mono_s() - t0;
    rq_free(&w);
    char why[512];
    chunk_field(&t, "error", why, sizeof why);
    cr_assert_str_neq(entry, t.id, "chunk %d was held %.0f s by re-reads, past its 5 s lease",
                      t.idx, held);
    cr_assert_geq(held, 4.0, "taken back after %.1f s, before its lease", held);
    cr_assert(strstr(why, "stopped renewing its lease") && strstr(why, "evil-worker"), "%s", why);
}

Test(dist_sec_lease, an_entry_read_with_noack_is_enqueued_again_and_the_job_completes)
{
    char id[64];
    queued_job(id, sizeof id);
    struct rq *w = tacl_as_worker(&A);
    struct took t;
    cr_assert_eq(take(w, EVIL, 1, 1, ">", &t, 1), 1);
    rq_free(&w);
    char entry[64] = "", why[512] = "", st[32];
    for (int i = 0; i < 300 && (!entry[0] || !strcmp(entry, t.id)); i++) {
        tmsleep(100);
        chunk_field(&t, "entry", entry, sizeof entry);
    }
    chunk_field(&t, "error", why, sizeof why);
    cr_assert_str_neq(entry, t.id, "chunk %d read with NOACK was never enqueued again", t.idx);
    cr_assert(strstr(why, "NOACK"), "chunk %d was enqueued again for another reason: %s", t.idx,
              why);
    cr_assert_gt(tacl_worker(&D, &A), 0);
    tacl_wait_state(Q, &D, id, NULL, 150000, st, sizeof st);
    cr_assert_str_eq(st, "done", "job %s is %s", id, st);
}

Test(dist_sec_lease, entries_taken_many_under_one_claim_are_taken_back_at_once)
{
    char id[64];
    queued_job(id, sizeof id);
    struct rq *w = tacl_as_worker(&A);
    struct took t[3];
    cr_assert_eq(take(w, EVIL, 3, 0, ">", t, 3), 3);
    rq_free(&w);
    char why[2][512] = { "", "" }, first[512] = "";
    for (int i = 0; i < 300 && !(why[0][0] && why[1][0]); i++) {
        tmsleep(100);
        chunk_field(&t[1], "error", why[0], sizeof why[0]);
        chunk_field(&t[2], "error", why[1], sizeof why[1]);
    }
    chunk_field(&t[0], "error", first, sizeof first);
    for (int k = 0; k < 2; k++)
        cr_assert(strstr(why[k], "more than one chunk under one claim"),
                  "chunk %d (taken with 2 others under one claim): '%s'", t[k + 1].idx, why[k]);
    cr_assert_null(strstr(first, "more than one"), "the first one taken: %s", first);
}
