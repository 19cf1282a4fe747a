/*
 * fuzz_records.c - libFuzzer target for the records read back from Redis
 * (issue 27): the job hash (rq_job_status_fill, what status, watch, report
 * and /metrics show), a chunk's hash (rq_chunk_rec_fill, the report), a
 * webhook delivery record (rq_notify_fill, what the controller POSTs) and a
 * worker's report (rq_report_parse and rq_report_proves, what the
 * controller acts on). Any
 * user that may write the queue's keys writes these, so whatever they hold
 * must come out bounded: every text terminated within its field and free
 * of control characters where it reaches a terminal, every number in
 * range, and the status JSON built from it.
 *
 * Input: byte 0 picks the record (0 job, 1 chunk, 2 delivery, 3 report); the rest is
 * the reply's elements separated by 0xFF, each element's first byte its
 * type (0 string, 1 integer, 2 nil, 3 status) and the rest its bytes.
 * Built and run by `make fuzz` (mk/fuzz.mk); seeds in
 * tests/data/fuzz-seeds/records/.
 */
#include "metrics.h"
#include "rq_claim.h"
#include "rq_notify.h"
#include "rq_report.h"
#include "rq_stats.h"

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ELEMENTS 256

/* A text field holds its NUL and, where asked, no ASCII control byte. */
static void check_text(const char *s, size_t size, int no_controls)
{
    size_t len = strnlen(s, size);
    if (len == size)
        abort();
    for (size_t i = 0; no_controls && i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            abort();
}

static void check_number(long long v)
{
    if (v < 0 || v > 1000000000000000LL)
        abort();
}

/* The reply the input describes, in `arr` (its elements in `el`, their
 * bytes pointing into data). */
static void make_reply(const uint8_t *data, size_t size, redisReply *arr, redisReply *el,
                       redisReply **ptrs)
{
    memset(arr, 0, sizeof *arr);
    arr->type = REDIS_REPLY_ARRAY;
    arr->element = ptrs;
    size_t i = 0;
    while (i <= size && arr->elements < MAX_ELEMENTS) {
        size_t j = i;
        while (j < size && data[j] != 0xFF)
            j++;
        redisReply *e = &el[arr->elements];
        memset(e, 0, sizeof *e);
        int kind = j > i ? data[i] & 3 : 0;
        const char *str = j > i ? (const char *)data + i + 1 : "";
        size_t len = j > i ? j - i - 1 : 0;
        if (kind == 1) {
            e->type = REDIS_REPLY_INTEGER;
            memcpy(&e->integer, str, len < sizeof e->integer ? len : sizeof e->integer);
        } else if (kind == 2) {
            e->type = REDIS_REPLY_NIL;
        } else {
            e->type = kind == 3 ? REDIS_REPLY_STATUS : REDIS_REPLY_STRING;
            e->str = (char *)str;
            e->len = len;
        }
        ptrs[arr->elements++] = e;
        i = j + 1;
    }
}

static void fuzz_job(const redisReply *r)
{
    struct rq_job_status *st = calloc(1, sizeof *st);
    snprintf(st->id, sizeof st->id, "20260101-000000-00000000");
    vr_err e = { 0 };
    if (rq_job_status_fill(st, r, &e) < 0) {
        if (!e.msg[0])
            abort(); /* a refusal says why */
        free(st);
        return;
    }
    check_text(st->state, sizeof st->state, 1);
    check_text(st->error, sizeof st->error, 1);
    check_text(st->input, sizeof st->input, 1);
    check_text(st->output, sizeof st->output, 1);
    check_number(st->frames_total);
    check_number(st->frames_done);
    check_number(st->created_ms);
    check_number(st->started_ms);
    check_number(st->finished_ms);
    if (st->chunks_total < 0 || st->chunks_total > 100000 ||
        st->chunk_slots < st->chunks_total || st->chunk_slots > 100000)
        abort();
    check_number(st->cuts);
    json_t *o = rq_job_status_json(st);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (!text)
        abort(); /* jansson refuses NaN and invalid UTF-8: neither may get this far */
    free(text);
    json_decref(o);
    free(st);
}

static void fuzz_chunk(const redisReply *r)
{
    struct rq_chunk_rec c = { .gpu_util = -1 };
    struct metrics *m = calloc(1, sizeof *m);
    rq_chunk_rec_fill(&c, r, m);
    check_text(c.state, sizeof c.state, 0);
    check_text(c.worker, sizeof c.worker, 0);
    check_text(c.error, sizeof c.error, 0);
    check_text(c.cut_for, sizeof c.cut_for, 0);
    check_text(c.lost_by, sizeof c.lost_by, 0);
    check_number(c.lost_frames);
    check_number(c.cuts);
    check_number(c.started_ms);
    check_number(c.done_ms);
    check_number(c.frames);
    check_number(c.attempts);
    free(m);
}

static void fuzz_notify(const redisReply *r)
{
    struct rq_notify *d = calloc(1, sizeof *d);
    snprintf(d->id, sizeof d->id, "20260101-000000-00000000:1");
    vr_err e = { 0 };
    if (rq_notify_fill(r, d, &e) == 0) {
        if (!d->job[0] || d->nurls < 0 || d->nurls > RQ_NOTIFY_MAX_URLS)
            abort();
        check_text(d->job, sizeof d->job, 0);
        check_text(d->state, sizeof d->state, 0);
        check_text(d->error, sizeof d->error, 0);
        for (int i = 0; i < d->nurls; i++)
            check_text(d->urls[i], sizeof d->urls[i], 0);
        check_number(d->seq);
        check_number(d->created_ms);
        check_number(d->frames_total);
    } else if (!e.msg[0]) {
        abort();
    }
    free(d);
}

/* The report's fields from the reply's string elements taken as pairs. */
static void fuzz_report(const redisReply *r)
{
    static char text[2 * RQ_MAX_FIELDS][2048];
    struct rq_msg m = { 0 };
    snprintf(m.stream, sizeof m.stream, "%s", RQ_REPORTS);
    snprintf(m.id, sizeof m.id, "1-1");
    for (size_t i = 0; i + 1 < r->elements && m.nfields < RQ_MAX_FIELDS; i += 2) {
        char *k = text[2 * m.nfields], *v = text[2 * m.nfields + 1];
        const redisReply *a = r->element[i], *b = r->element[i + 1];
        if (a->type != REDIS_REPLY_STRING || b->type != REDIS_REPLY_STRING)
            continue;
        snprintf(k, sizeof text[0], "%.*s", (int)a->len, a->str);
        snprintf(v, sizeof text[0], "%.*s", (int)b->len, b->str);
        m.key[m.nfields] = k;
        m.val[m.nfields++] = v;
    }
    struct rq_report rep;
    vr_err e = { 0 };
    if (rq_report_parse(&m, &rep, &e) < 0) {
        if (!e.msg[0])
            abort();
        return;
    }
    if (strlen(rep.reason) > 1024 || strlen(rep.note) > 1024)
        abort();
    if (strcmp(rep.kind, "died")) {
        if (strcmp(rep.stream, RQ_CHUNKS) && strcmp(rep.stream, RQ_CHUNKS_HI))
            abort();
        if (rep.idx < -1 || rep.idx > 99999 || (rep.idx < 0) != !rep.job[0])
            abort();
        if (strlen(rep.consumer) >= RQ_CONSUMER_MAX)
            abort();
        if (rep.frames != -1) /* -1: a renewal or other report that says none */
            check_number(rep.frames);
        if (!(rep.fps >= 0 && rep.fps <= 1e7))
            abort();
    }
    rq_report_proves(&rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static redisReply el[MAX_ELEMENTS];
    static redisReply *ptrs[MAX_ELEMENTS];
    redisReply arr;
    make_reply(data + 1, size - 1, &arr, el, ptrs);
    switch (data[0] % 4) {
    case 0: fuzz_job(&arr); break;
    case 1: fuzz_chunk(&arr); break;
    case 2: fuzz_notify(&arr); break;
    default: fuzz_report(&arr); break;
    }
    return 0;
}
