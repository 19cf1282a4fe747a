/*
 * ctl_cut.c - work stealing for elastic jobs (queue/rq_cut.h, issue 44):
 * when a worker has been idle longer than a chunk's set-up and no chunk
 * waits in the streams, the running chunk with the most frames left is cut
 * at a piece of its job's plan (a keyframe the plan checked, with its own
 * pre-roll and warm-up) past what its worker has reported done, near the
 * middle of what is left; the tail is queued for the idle worker. Before
 * anyone is idle, a straggler's chunk is cut the same way, so that it ends
 * with the fleet (ctl_cut_slow.c), its tail parted among the others, and
 * that worker steps aside from the tails once it ends it (RQ_CUT_ASIDE_MS). The pieces' plan is kept from the job's
 * plan, or planned again, deterministically, from the job record's
 * piece_ms and piece_warmup (a controller that took the job over).
 */
#include "ctl.h"
#include "ctl_cut.h"

#include "clock.h"
#include "job.h"
#include "log.h"
#include "remux_range.h"
#include "rq_cut.h"
#include "rq_fleet.h"
#include "rq_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Jobs whose pieces a controller keeps; the oldest goes first. */
#define CTL_CUT_PLANS 8
/* How often the loop looks for idle workers. */
#define CTL_CUT_EVERY_MS 250
/* The margin past the frames a worker's reader reported handed on: what it
 * reads before it hears of the cut (the report is up to a heartbeat old,
 * the answer comes with the next renewal, the loop looks every turn), in
 * heartbeats at its own rate, plus a turn and this many frames. */
#define CTL_CUT_MARGIN_HB 2
#define CTL_CUT_MARGIN_FRAMES 2
/* A straggler's tail is parted among the workers free first; a part lasts
 * this many chunk set-ups at least (CTL_CUT_SETUP_MS), at the rate of the
 * worker expected free first, or it costs more than it spreads. */
#define CTL_CUT_PART_SETUPS 4

struct ctl_cut_plan {
    char id[JOB_ID_MAX];
    char fp[REMUX_FP_MAX];
    struct remux_plan pl;
    long long used_ms;
};

static struct ctl_cut_plan cut_plans[CTL_CUT_PLANS];

void ctl_cut_keep(struct ctl *c, const char *id, struct remux_plan *pl, const char *fp)
{
    (void)c;
    struct ctl_cut_plan *slot = &cut_plans[0];
    for (int i = 0; i < CTL_CUT_PLANS; i++) {
        if (!strcmp(cut_plans[i].id, id)) {
            slot = &cut_plans[i];
            break;
        }
        if (cut_plans[i].used_ms < slot->used_ms)
            slot = &cut_plans[i];
    }
    remux_plan_release(&slot->pl);
    snprintf(slot->id, sizeof slot->id, "%s", id);
    snprintf(slot->fp, sizeof slot->fp, "%s", fp);
    slot->pl = *pl;
    slot->used_ms = (long long)clock_mono_ms();
    memset(pl, 0, sizeof *pl);
}

/* Job id's pieces: kept, or planned again when `replan` (NULL when the job
 * is not elastic or its source cannot be planned as it was). */
static struct ctl_cut_plan *ctl_cut_plan_of(struct ctl *c, const char *id, int replan)
{
    for (int i = 0; i < CTL_CUT_PLANS; i++)
        if (!strcmp(cut_plans[i].id, id)) {
            cut_plans[i].used_ms = (long long)clock_mono_ms();
            return &cut_plans[i];
        }
    if (!replan)
        return NULL;
    long long ms = 0, warmup = 0;
    struct job_spec js;
    vr_err e = { 0 };
    if (rq_job_number(c->q, id, "piece_ms", &ms, NULL) <= 0 || ms <= 0 || ms > 3600000 ||
        rq_job_number(c->q, id, "piece_warmup", &warmup, NULL) < 0 || warmup < 0 ||
        warmup > 1000 || ctl_jobfiles_spec(c, id, &js, &e) < 0)
        return NULL;
    struct ctl_paths p;
    if (ctl_paths_open(c, &js, 0, &p, &e) < 0)
        return NULL;
    const struct remux_plan_opts o = { .chunk_seconds = ms / 1000.0, .warmup = (int)warmup };
    struct remux_plan pl;
    char fp[REMUX_FP_MAX];
    int rc = remux_plan(p.in_path, &o, &pl, &e);
    if (rc == 0 && remux_fingerprint(p.in, fp, sizeof fp, &e) < 0) {
        remux_plan_release(&pl);
        rc = -1;
    }
    ctl_paths_close(&p);
    if (rc < 0) {
        log_warn("job %s: its pieces cannot be planned again (%s); its chunks are not cut", id,
                 e.msg);
        return NULL;
    }
    ctl_cut_keep(c, id, &pl, fp);
    return ctl_cut_plan_of(c, id, 0);
}

/* The piece whose start is range r's end (pieces' count: none, the end). */
static int ctl_cut_piece_at(const struct remux_plan *pl, const struct chunk_range *r)
{
    if (!r->has_end)
        return pl->nchunks;
    for (int i = 1; i < pl->nchunks; i++)
        if (pl->chunks[i].start.pts == r->end.pts && pl->chunks[i].start.dts == r->end.dts)
            return i;
    return -1;
}

/* A running chunk that may be cut: its worker's progress, its record and
 * its job's pieces. */
struct ctl_cut_cand {
    char job[JOB_ID_MAX];
    int idx;
    int e;                    /* the piece its range ends before */
    long long frames;         /* its frames, from its pieces' (chunk_range.frames_est) */
    long long done, left;     /* frames encoded, frames left to encode */
    long long read;           /* frames its reader handed on (ahead of `done`) */
    double fps;               /* its worker's rate now (0 unknown) */
    int hb_ms;                /* its worker's heartbeat */
    struct rq_cut_seen seen;  /* its entry and `end` as read */
    struct ctl_cut_plan *cp;
    struct chunk_task t;
};

/* A worker's rate as its heartbeat wrote it (Redis's): 0 unknown or absurd. */
static double ctl_cut_fps(double fps)
{
    return fps > 0 && fps < 1e5 ? fps : 0;
}

/* Reads busy worker w's chunk into k (one script call): 1 when it is a
 * running range chunk of an elastic job whose pieces' frames are known
 * (counted, or from their time spans: Matroska), else 0. `replan`: its
 * job's pieces are planned again when this controller keeps none (an idle
 * worker's cut; the straggler rule, every turn, uses those kept). */
static int ctl_cut_candidate(struct ctl *c, const struct rq_worker_info *w,
                             struct ctl_cut_cand *k, int replan)
{
    const char *slash = strrchr(w->chunk, '/');
    if (strcmp(w->state, "busy") || !slash || slash == w->chunk ||
        (size_t)(slash - w->chunk) >= sizeof k->job)
        return 0;
    snprintf(k->job, sizeof k->job, "%.*s", (int)(slash - w->chunk), w->chunk);
    char *end;
    long v = strtol(slash + 1, &end, 10);
    if (!job_id_valid(k->job) || *end || v < 0 || v >= JOB_MAX_CHUNKS)
        return 0;
    k->idx = (int)v;
    static char task[JOB_MAX_JSON];
    if (rq_cut_running(c->q, k->job, k->idx, &k->seen, task, sizeof task, NULL) != 1 ||
        chunk_task_parse(task, strlen(task), &k->t, NULL) < 0 || !k->t.is_range ||
        strcmp(k->t.job, k->job) || k->t.idx != k->idx)
        return 0;
    k->cp = ctl_cut_plan_of(c, k->job, replan);
    if (!k->cp || strcmp(k->cp->fp, k->t.range.fingerprint))
        return 0;
    k->e = ctl_cut_piece_at(&k->cp->pl, &k->t.range);
    if (k->e < 0 || k->idx >= k->e || k->e > k->cp->pl.nchunks)
        return 0;
    k->frames = 0;
    for (int i = k->idx; i < k->e; i++) {
        if (k->cp->pl.chunks[i].frames_est < 0)
            return 0;
        k->frames += k->cp->pl.chunks[i].frames_est;
    }
    /* the reader runs ahead of the encoder: the cut goes past the first,
     * the middle is the encoder's */
    k->done = w->chunk_frames > 0 ? w->chunk_frames : 0;
    k->read = w->chunk_read > k->done ? w->chunk_read : k->done;
    k->left = k->frames - k->done;
    k->fps = ctl_cut_fps(w->fps);
    k->hb_ms = w->hb_ms > 0 && w->hb_ms <= 60000 ? w->hb_ms : 1000;
    return k->left > 0;
}

/* The frames k's worker keeps when it is cut for an idle worker running at
 * idle_fps (0 unknown): where both would end together (the middle of what
 * is left to encode when their rates are alike or unknown; a slow worker
 * keeps less). */
static long long ctl_cut_want_idle(const struct ctl_cut_cand *k, double idle_fps)
{
    double share = k->fps > 0 && idle_fps > 0 ? k->fps / (k->fps + idle_fps) : 0.5;
    return k->done + (long long)(k->left * share);
}

/* Where to cut k so that its worker keeps `want` frames: the piece boundary
 * nearest, past what its reader handed on by the margin, leaving a piece
 * each side; -1 none. */
static int ctl_cut_point(const struct ctl_cut_cand *k, long long want)
{
    const struct remux_plan *pl = &k->cp->pl;
    double ahead_s = (CTL_CUT_MARGIN_HB * k->hb_ms + CTL_CUT_EVERY_MS) / 1000.0;
    long long margin = (k->fps > 0 ? (long long)(k->fps * ahead_s) : 0) + CTL_CUT_MARGIN_FRAMES;
    long long acc = 0;
    int best = -1;
    long long best_d = 0;
    for (int m = k->idx + 1; m < k->e; m++) {
        acc += pl->chunks[m - 1].frames_est; /* frames before piece m */
        if (acc < k->read + margin || acc >= k->frames)
            continue;
        long long d = acc > want ? acc - want : want - acc;
        if (best < 0 || d < best_d) {
            best = m;
            best_d = d;
        }
    }
    return best;
}

/* Parts k's tail, from piece m to its end, into at most `parts` chunks of
 * near-equal frames, each `min_frames` at least (a piece at least): their
 * first pieces into at[0..), at[0] = m. Returns how many. */
static int ctl_cut_tails(const struct ctl_cut_cand *k, int m, int parts, long long min_frames,
                         int at[RQ_CUT_TAILS_MAX])
{
    const struct remux_plan *pl = &k->cp->pl;
    long long tail = 0;
    for (int i = m; i < k->e; i++)
        tail += pl->chunks[i].frames_est;
    parts = parts < 1 ? 1 : parts > RQ_CUT_TAILS_MAX ? RQ_CUT_TAILS_MAX : parts;
    while (parts > 1 && tail / parts < (min_frames > 0 ? min_frames : 1))
        parts--;
    int n = 1;
    at[0] = m;
    long long acc = 0;
    for (int i = m; i < k->e - 1 && n < parts; i++) {
        acc += pl->chunks[i].frames_est; /* frames of the tail before piece i + 1 */
        if (acc * parts >= tail * n) /* the n-th share's end reached: piece i + 1 starts a part */
            at[n++] = i + 1;
    }
    return n;
}

/* Cuts k at piece starts[0] for worker `for_w` (idle), or, `slow`, because
 * k's worker is slow, its tail for the first workers free (`for_w` is
 * expected first); the tail is nt chunks, the i-th from piece starts[i]:
 * 1 cut, 0 not, <0 error. */
static int ctl_cut_make(struct ctl *c, const struct ctl_cut_cand *k, const int *starts, int nt,
                        const char *for_w, int slow)
{
    int m = starts[0];
    const struct ctl_cut_plan *cp = k->cp;
    int e = k->e;
    struct job_spec js;
    vr_err err = { 0 };
    if (!ctl_submitter_may_add_chunks(c, k->job, nt)) /* each tail is one more chunk in flight */
        return 0;
    if (ctl_jobfiles_spec(c, k->job, &js, &err) < 0)
        return 0;
    struct chunk_range head, tail;
    ctl_range_merge(&cp->pl, k->idx, m, &head);
    char *ht = NULL, *tt[RQ_CUT_TAILS_MAX] = { 0 }, hend[RQ_CUT_END_MAX];
    int rc = ctl_range_task_json(k->job, &js, k->t.layout, k->idx, &head, k->t.range.fingerprint,
                                 &ht, &err);
    for (int i = 0; i < nt && rc == 0; i++) {
        ctl_range_merge(&cp->pl, starts[i], i + 1 < nt ? starts[i + 1] : e, &tail);
        rc = ctl_range_task_json(k->job, &js, k->t.layout, starts[i], &tail,
                                 k->t.range.fingerprint, &tt[i], &err);
    }
    if (rc == 0) {
        struct chunk_task *h = calloc(1, sizeof *h);
        if (h && chunk_task_parse(ht, strlen(ht), h, NULL) == 0) {
            rq_cut_end_text(&h->range, hend, sizeof hend);
            rc = rq_chunk_cut_tails(c->q, k->job, k->idx, k->seen.entry, k->seen.end, ht, hend,
                                    nt, starts, (const char *const *)tt, js.max_attempts, for_w,
                                    slow, &err);
        } else {
            rc = 0;
        }
        free(h);
    }
    free(ht);
    for (int i = 0; i < nt; i++)
        free(tt[i]);
    int at_last = starts[nt - 1];
    if (rc == 1 && slow) {
        double at = cp->pl.chunks[m].start_s;
        log_info("job %s: chunk %d cut at %.2f s: its worker runs slow (%.2f fps, %lld of its "
                 "frames done, %lld left); chunks %d..%d take the tail in %d part%s, for the "
                 "first workers free (%s expected first)", k->job, k->idx, at, k->fps, k->done,
                 k->left, m, at_last, nt, nt == 1 ? "" : "s", for_w);
        rq_event(c->q, k->job, "chunk %d cut at %.1f s, its worker slow (%.1f fps), for worker "
                 "%s or the first free (chunks %d..%d, %d part%s)", k->idx, at, k->fps, for_w, m,
                 at_last, nt, nt == 1 ? "" : "s");
    } else if (rc == 1) {
        double at = cp->pl.chunks[m].start_s;
        log_info("job %s: chunk %d cut at %.2f s for worker %s (%lld of its frames done, %lld "
                 "left; chunk %d takes the tail)", k->job, k->idx, at, for_w, k->done, k->left,
                 m);
        rq_event(c->q, k->job, "chunk %d cut at %.1f s for worker %s (chunk %d)", k->idx, at,
                 for_w, m);
    } else if (rc < 0) {
        log_warn("job %s: chunk %d: cannot cut: %s", k->job, k->idx, err.msg);
    } else {
        log_info("job %s: chunk %d: not cut (it ended, was requeued or cut meanwhile)", k->job,
                 k->idx);
    }
    return rc;
}

/* The straggler rule's view of the running chunks (ctl_cut_slow.c): one
 * entry per busy worker whose chunk may be cut, into r; the count. k: a
 * candidate's scratch. */
static int ctl_cut_rates(struct ctl *c, const struct rq_worker_info *w, int n,
                         struct ctl_cut_cand *k, int replan, struct ctl_cut_rate *r)
{
    int nr = 0;
    for (int i = 0; i < n; i++)
        if (ctl_cut_candidate(c, &w[i], k, replan)) {
            const struct remux_plan *pl = &k->cp->pl;
            int last = k->e - 1; /* a tail starts at one of its pieces: their warm-up alike */
            r[nr++] = (struct ctl_cut_rate){ .wi = i, .done = k->done, .left = k->left,
                                             .fps = ctl_cut_rate_of(&w[i]),
                                             .fps_low = ctl_cut_fps(w[i].fps),
                                             .warmup = pl->chunks[last].warmup };
        }
    return nr;
}

/* The chunk to cut this turn, read afresh into best, the frames its worker
 * keeps into *want, the worker the tail is for into *for_w (the idle one
 * waiting longest, or the one expected free first), *slow when it is a
 * straggler's, then with the parts its tail is cut into (one for each
 * other worker running a chunk that may be cut: they end before it) into
 * *parts and the fewest frames a part may have into *part_min (0 for an
 * idle worker's cut, in one part): 1, or 0 none. */
static int ctl_cut_choose(struct ctl *c, const struct rq_worker_info *w, int n, long long srv,
                          struct ctl_cut_cand *k, struct ctl_cut_cand *best, long long *want,
                          const char **for_w, int *slow, int *parts, long long *part_min)
{
    int pick = -1, idle = -1;
    long long waited = 0;
    for (int i = 0; i < n; i++) {
        long long t = ctl_cut_idle_for(&w[i], srv);
        if (!strcmp(w[i].state, "idle") && !rq_worker_silent(&w[i], srv) &&
            (idle < 0 || t > waited)) {
            idle = i;
            waited = t;
        }
    }
    struct ctl_cut_rate *r = malloc((size_t)n * sizeof *r);
    int nr = r ? ctl_cut_rates(c, w, n, k, idle >= 0, r) : 0, first = -1;
    if (idle >= 0) { /* one cut a turn: a second idle worker gets the next turn's */
        for (int i = 0; i < nr; i++)
            if (pick < 0 || r[i].left > r[pick].left)
                pick = i;
    } else {
        pick = ctl_cut_slow_pick(r, nr, want, &first);
    }
    int wi = pick >= 0 ? r[pick].wi : -1;
    *slow = idle < 0;
    *parts = idle < 0 && nr > 1 ? nr - 1 : 1;
    /* a part lasts a few set-ups at the rate of the worker free first */
    *part_min = idle < 0 && first >= 0
                    ? (long long)(r[first].fps * CTL_CUT_PART_SETUPS * CTL_CUT_SETUP_MS / 1000)
                    : 0;
    *for_w = idle >= 0 ? w[idle].name : first >= 0 ? w[r[first].wi].name : "";
    free(r);
    /* afresh: another job's candidate may have taken its pieces' slot */
    if (wi < 0 || !ctl_cut_candidate(c, &w[wi], best, idle >= 0))
        return 0;
    double rate = ctl_cut_rate_of(&w[wi]); /* the faster of two: the wider margin */
    best->fps = rate > best->fps ? rate : best->fps;
    if (idle >= 0) {
        double idle_fps = ctl_cut_fps(w[idle].fps); /* its last chunk's rate */
        *want = ctl_cut_want_idle(best, idle_fps);
        /* a short gap makes no cut: one a chunk's set-up would not pay for */
        int m = ctl_cut_point(best, *want);
        if (m > 0 && !ctl_cut_idle_waited(&w[idle], srv, best->cp->pl.chunks[m].warmup))
            return 0;
    }
    return 1;
}

void ctl_cut_turn(struct ctl *c)
{
    static long long last;
    long long now = (long long)clock_mono_ms();
    if (now - last < CTL_CUT_EVERY_MS)
        return;
    last = now;
    enum { MAXW = 256 };
    struct rq_worker_info *w = malloc(MAXW * sizeof *w);
    struct ctl_cut_cand *k = malloc(sizeof *k), *best = malloc(sizeof *best);
    int n = w && k && best ? rq_workers_list(c->q, w, MAXW, NULL) : -1;
    long long srv = n > 0 ? rq_server_ms(c->q) : 0;
    if (n > 0) {
        ctl_cut_idle_note(w, n, srv);
        ctl_cut_rate_note(w, n);
    }
    long long want = 0, part_min = 0;
    const char *for_w = "";
    int slow = 0, parts = 1, starts[RQ_CUT_TAILS_MAX], nt = 0;
    int m = n > 0 && rq_chunks_waiting(c->q, NULL) == 0 &&
                    ctl_cut_choose(c, w, n, srv, k, best, &want, &for_w, &slow, &parts,
                                   &part_min)
                ? ctl_cut_point(best, want)
                : -1;
    if (m > 0)
        nt = ctl_cut_tails(best, m, parts, part_min, starts);
    /* VR_TEST_CUT_DELAY_MS (tests only): a stall between what was read
     * and the cut, so two controllers race for one (rq_cut.h) */
    unsigned delay = m > 0 ? clock_test_delay_ms("VR_TEST_CUT_DELAY_MS") : 0;
    if (delay)
        usleep(delay * 1000u);
    if (m > 0 && ctl_cut_make(c, best, starts, nt, for_w, slow) == 1 && !slow)
        ctl_cut_idle_served(for_w, srv);
    free(w);
    free(k);
    free(best);
}
