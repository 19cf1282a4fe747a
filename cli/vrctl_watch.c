/*
 * vrctl_watch.c - the live progress display of `vrctl watch` (one job, or
 * every job), `submit --wait` and `vrctl run`: a bar with fps and ETA, a
 * line per worker and the last events, redrawn in place on a terminal; log
 * lines without one. What it promises (issue 45, item 8):
 * - the bar never goes backwards: a killed worker's frames in flight leave
 *   the job's count, so the bar keeps the most frames it has shown;
 * - a worker that stops answering while it holds a chunk is an event line
 *   (its line vanished, and nothing said why until its lease lapsed);
 * - a Redis outage is a line counting its seconds, and its end another;
 * - every line fits the terminal's width (term_fit.h), so the redraw,
 *   which moves the cursor up as many lines as it drew, stays in place.
 */
#include "vrctl.h"

#include "clock.h"
#include "cmdtable.h"
#include "log.h"
#include "rq_events.h"
#include "rq_fleet.h"
#include "rq_stats.h"
#include "term_fit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { VIEW_LOCAL = 4, VIEW_LOST = 32, VIEW_WORKERS = 256, VIEW_JOBS = 50 };

/* What one watched job keeps between two redraws. */
struct vrctl_view {
    char id[48];
    long long shown;            /* frames on the bar: never fewer than before */
    long long last_done;        /* chunks_done at the last log line (no terminal) */
    char last_ev[RQ_ID_MAX];    /* the last event printed (no terminal) */
    int stalled;                /* a full maxmemory was said (no terminal) */
    char lost[VIEW_LOST][160];  /* workers already said to have stopped answering */
    int nlost;
    char bar[512];              /* its last bar line, shown again while Redis is away */
    int ended, rc;              /* the job ended; 0 done, 1 failed or cancelled, 2 gone */
};

/* What the whole display keeps. */
struct vrctl_screen {
    int tty, cols, drawn;
    struct rq_event_entry local[VIEW_LOCAL]; /* its own events, oldest first */
    char local_job[VIEW_LOCAL][48];          /* the job each is about ("" all) */
    int nlocal;
    long long outage_ms;        /* when Redis stopped answering; 0 while it answers */
    long long calm_ms;          /* no worker is called lost before this (after an
                                 * outage every heartbeat is old for a moment) */
    char outage[256];           /* why (the error text) */
    struct rq_worker_info *w;   /* the workers as last read */
    int nw;
    long long now;              /* Redis's clock at that read */
};

/* ---- lines ---- */

/* One line of the redrawn block: made safe and cut to the terminal. */
static void __attribute__((format(printf, 2, 3)))
screen_line(struct vrctl_screen *sc, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    term_fit(buf, sc->cols - 1); /* the last column makes some terminals wrap */
    fprintf(stderr, "\033[K%s\n", buf);
    sc->drawn++;
}

static void screen_event(struct vrctl_screen *sc, const struct rq_event_entry *e)
{
    char buf[1024] = "";
    FILE *m = fmemopen(buf, sizeof buf - 1, "w");
    if (!m)
        return;
    vrctl_event_print(e, 0, m);
    fclose(m);
    buf[strcspn(buf, "\n")] = '\0';
    screen_line(sc, "  %s", buf);
}

/* Notes an event of watch's own (about job `id`, "" for all): shown among
 * the job's events on a terminal, printed at once without one. */
static void screen_note(struct vrctl_screen *sc, const char *id, int chunk, const char *worker,
                        const char *fmt, ...)
{
    struct rq_event_entry e = { .ms = rq_now_ms(), .chunk = chunk };
    snprintf(e.worker, sizeof e.worker, "%s", worker ? worker : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    if (!sc->tty) {
        if (log_get_format() == LOG_JSON)
            log_say(LOG_WARN, "%s%sevent: %s\n", id, id[0] ? ": " : "", e.msg);
        else {
            fprintf(stderr, "%s%s", id[0] ? id : "vrctl", ": ");
            vrctl_event_print(&e, 0, stderr);
        }
        return;
    }
    if (sc->nlocal == VIEW_LOCAL) {
        memmove(sc->local, sc->local + 1, (VIEW_LOCAL - 1) * sizeof sc->local[0]);
        memmove(sc->local_job, sc->local_job + 1, (VIEW_LOCAL - 1) * sizeof sc->local_job[0]);
        sc->nlocal--;
    }
    sc->local[sc->nlocal] = e;
    snprintf(sc->local_job[sc->nlocal++], sizeof sc->local_job[0], "%s", id);
}

static int event_by_time(const void *a, const void *b)
{
    const struct rq_event_entry *x = a, *y = b;
    return (x->ms > y->ms) - (x->ms < y->ms);
}

/* The last events of job `id` (`from_redis` of them from its stream, 0
 * for none) with watch's own about it, oldest first, at most 4. */
static void screen_events(struct vrctl_screen *sc, struct rq *q, const char *id, int from_redis)
{
    struct rq_event_entry ev[3 + VIEW_LOCAL];
    int n = from_redis > 0 ? rq_events_read(q, id, NULL, ev, from_redis > 3 ? 3 : from_redis,
                                            NULL) : 0;
    n = n < 0 ? 0 : n;
    for (int i = 0; i < sc->nlocal; i++)
        if (!sc->local_job[i][0] || !strcmp(sc->local_job[i], id))
            ev[n++] = sc->local[i];
    qsort(ev, (size_t)n, sizeof ev[0], event_by_time);
    for (int i = n > 4 ? n - 4 : 0; i < n; i++)
        screen_event(sc, &ev[i]);
}

/* ---- one job's figures ---- */

static void vrctl_bar(char *buf, size_t n, double frac, int width)
{
    int fill = (int)(frac * width + 0.5);
    if (fill > width)
        fill = width;
    size_t k = 0;
    buf[k++] = '[';
    for (int i = 0; i < width && k + 2 < n; i++)
        buf[k++] = i < fill ? '#' : '.';
    buf[k++] = ']';
    buf[k] = '\0';
}

/* The bar line of `st` into v->bar; also the figures for a log line. The
 * frames shown are those committed and those the running chunks have
 * encoded so far (the bar moves within a chunk), never fewer than shown
 * before: when a worker dies its frames leave the count until another
 * worker redoes them, and the bar went from 26% to 20%. */
static double view_figures(struct vrctl_view *v, const struct rq_job_status *st, int cols,
                           char *bar, size_t nbar, char *eta, size_t neta)
{
    long long frames = st->frames_done + st->frames_running;
    if (frames > v->shown)
        v->shown = frames;
    if (st->frames_total > 0 && v->shown > st->frames_total)
        v->shown = st->frames_total;
    double frac = st->frames_total > 0 ? (double)v->shown / st->frames_total : 0;
    snprintf(eta, neta, "--");
    if (st->eta_s >= 0 && !job_state_ended(st->state))
        snprintf(eta, neta, "%.0fs", st->eta_s);
    /* on a terminal the percentage before a bar that narrows with it:
     * what is cut at the right edge is the least needed */
    char tbar[64];
    vrctl_bar(tbar, sizeof tbar, frac, cols >= 140 ? 30 : cols >= 100 ? 20 : 10);
    snprintf(v->bar, sizeof v->bar, "%s %3.0f%% %s  chunks %lld/%lld  frames %lld/%lld  %.1f fps  "
             "ETA %s  [%s]", st->id, frac * 100, tbar, st->chunks_done, st->chunks_total, v->shown,
             st->frames_total, st->fps, eta, st->state);
    vrctl_bar(bar, nbar, frac, 30);
    return frac;
}

/* Workers holding a chunk of v's job that stopped answering (killed,
 * stopped, or cut off from Redis): an event each, once. */
static void view_lost(struct vrctl_screen *sc, struct vrctl_view *v)
{
    size_t len = strlen(v->id);
    for (int i = 0; i < sc->nw && sc->now >= sc->calm_ms; i++) {
        const struct rq_worker_info *w = &sc->w[i];
        if (strncmp(w->chunk, v->id, len) || w->chunk[len] != '/' ||
            !rq_worker_silent(w, sc->now))
            continue;
        int seen = 0;
        for (int k = 0; k < v->nlost && !seen; k++)
            seen = !strcmp(v->lost[k], w->name);
        if (seen)
            continue;
        if (v->nlost < VIEW_LOST)
            snprintf(v->lost[v->nlost++], sizeof v->lost[0], "%s", w->name);
        screen_note(sc, v->id, (int)rq_record_ll(w->chunk + len + 1), w->name,
                    "stopped answering %.1f s ago, %lld frames in hand (killed, stopped or cut "
                    "off from Redis): the chunk is requeued when its lease lapses",
                    (sc->now - w->seen_ms) / 1000.0, w->chunk_frames);
    }
}

/* Lines of the live workers working on v's job ("name  chunk  fps"). */
static void view_workers(struct vrctl_screen *sc, const struct vrctl_view *v)
{
    size_t len = strlen(v->id);
    for (int i = 0; i < sc->nw; i++) {
        const struct rq_worker_info *w = &sc->w[i];
        if (strncmp(w->chunk, v->id, len) || w->chunk[len] != '/' || rq_worker_silent(w, sc->now))
            continue;
        /* the chunk in hand: its frames so far and their rate (the heartbeat's) */
        screen_line(sc, "  %-40s chunk %-6s %lld frames, %.2f fps", w->name, w->chunk + len + 1,
                    w->chunk_frames, w->fps);
    }
}

/* Without a terminal: every event of v's job not printed yet, and a stall once. */
static void view_new_events(struct rq *q, struct vrctl_view *v)
{
    struct rq_event_entry ev[50];
    char full[512];
    int is_full = rq_memory_full(q, full, sizeof full, NULL) > 0;
    if (is_full && !v->stalled)
        log_say(LOG_WARN, "%s: stalled: %s\n", v->id, full);
    v->stalled = is_full;
    int n = rq_events_read(q, v->id, v->last_ev[0] ? v->last_ev : NULL, ev, 50, NULL);
    for (int i = 0; i < n; i++) {
        if (log_get_format() == LOG_JSON) { /* one log object a line, its chunk a field */
            log_ctx_thread(v->id, ev[i].chunk);
            log_say(LOG_INFO, "%s: event: %s\n", v->id, ev[i].msg);
            log_ctx_thread(v->id, -1);
            continue;
        }
        fprintf(stderr, "%s: ", v->id);
        vrctl_event_print(&ev[i], 0, stderr);
    }
    if (n > 0)
        snprintf(v->last_ev, sizeof v->last_ev, "%s", ev[n - 1].id);
}

/* The job's end, said once: "done in ..." or its state and error. */
static int view_end(struct rq *q, const struct rq_job_status *st)
{
    if (!strcmp(st->state, "done")) {
        char ch[16];
        vrctl_job_chunking(q, st->id, ch, sizeof ch);
        log_say(LOG_INFO, "%s: done in %.1f s (%.1f fps; %s%s%s%s %.2f s, stitch %.2f s): %s\n",
                st->id, st->wall_s, st->fps, ch[0] ? "chunks " : "", ch, ch[0] ? ", " : "",
                vrctl_chunk_step(ch), st->split_s, st->stitch_s, st->output);
        return 0;
    }
    log_say(LOG_ERROR, "%s: %s%s%s\n", st->id, st->state, st->error[0] ? ": " : "", st->error);
    return 1;
}

/* Which hints (1: no controller, 2: no worker) the lines of hint[] are. */
static int vrctl_hint_kinds(char hint[2][200], int n)
{
    int kinds = 0;
    for (int k = 0; k < n; k++)
        kinds |= !strncmp(hint[k], "no controller", 13) ? 1 : 2;
    return kinds;
}

/* ---- the loop ---- */

/* Redis did not answer: the outage noted once; on a terminal the last
 * bars again and a line counting its seconds. */
static void screen_outage(struct vrctl_screen *sc, struct vrctl_view *views, int nv,
                          const char *why)
{
    long long now = rq_now_ms();
    if (!sc->outage_ms) {
        sc->outage_ms = now;
        snprintf(sc->outage, sizeof sc->outage, "%s", why);
        screen_note(sc, nv == 1 ? views[0].id : "", -1, NULL, "Redis unreachable (%s): "
                    "retrying; the workers go on with the chunks in hand", why);
    }
    if (!sc->tty)
        return;
    if (sc->drawn)
        fprintf(stderr, "\033[%dA", sc->drawn);
    sc->drawn = 0;
    sc->cols = term_cols(2);
    for (int i = 0; i < nv; i++)
        if (views[i].bar[0])
            screen_line(sc, "%s", views[i].bar);
    screen_line(sc, "  Redis unreachable for %.0f s (%s); retrying",
                (now - sc->outage_ms) / 1000.0, sc->outage);
    fprintf(stderr, "\033[J");
}

/* ---- one turn, step by step ---- */

/* Every job: those live now join (at the start, or submitted since). */
static void watch_join(struct rq *q, struct vrctl_view *views, int *nv, char (*ids)[48], int n,
                       struct rq_job_status *st)
{
    for (int i = 0; i < n && *nv < VIEW_JOBS; i++) {
        int known = 0;
        for (int k = 0; k < *nv && !known; k++)
            known = !strcmp(views[k].id, ids[i]);
        if (known || rq_job_status(q, ids[i], 0, st, NULL) < 0 || job_state_ended(st->state))
            continue;
        memset(&views[*nv], 0, sizeof views[*nv]);
        snprintf(views[*nv].id, sizeof views[*nv].id, "%s", ids[i]);
        views[(*nv)++].last_done = -1;
    }
}

/* Each watched job's figures (and, off a terminal, its line and new
 * events): 1, or 0 when Redis failed (e). *live: the jobs not ended;
 * *gone: the one job watched was purged. */
static int watch_figures(struct rq *q, struct vrctl_screen *sc, struct vrctl_view *views, int nv,
                         struct rq_job_status *st, const char *one, vr_err *e, int *live,
                         int *gone)
{
    int ok = 1;
    for (int i = 0; i < nv; i++) {
        struct vrctl_view *v = &views[i];
        if (v->ended)
            continue;
        if (rq_job_status(q, v->id, 0, st, e) < 0) {
            if (e->code != VR_ENOENT) {
                ok = 0;
                break;
            }
            v->ended = 1; /* purged while watched */
            v->rc = 2;
            *gone = one != NULL;
            continue;
        }
        char bar[64], eta[32];
        double frac = view_figures(v, st, sc->cols, bar, sizeof bar, eta, sizeof eta);
        view_lost(sc, v);
        if (!sc->tty) {
            view_new_events(q, v);
            if (st->chunks_done != v->last_done || job_state_ended(st->state)) {
                /* the bar is for eyes: a log object carries the figures only */
                int text = log_get_format() == LOG_TEXT;
                log_say(LOG_INFO, "%s%s%s %3.0f%% chunks %lld/%lld frames %lld/%lld %.1f fps "
                        "ETA %s [%s]\n", v->id, text ? " " : "", text ? bar : "", frac * 100,
                        st->chunks_done, st->chunks_total, v->shown, st->frames_total,
                        st->fps, eta, st->state);
                v->last_done = st->chunks_done;
            }
        }
        if (job_state_ended(st->state)) {
            v->ended = 2; /* its end is said after the redraw below */
            continue;
        }
        (*live)++;
    }
    return ok;
}

/* On a terminal the block redrawn in place; else a hint said once, when
 * one appears. */
static void watch_draw(struct vrctl_screen *sc, struct rq *q, struct vrctl_view *views, int nv,
                       const char *one, char hint[][200], int nh, int *hint_shown)
{
    if (sc->tty) {
        if (sc->drawn)
            fprintf(stderr, "\033[%dA", sc->drawn);
        sc->drawn = 0;
        sc->cols = term_cols(2);
        char full[512];
        if (rq_memory_full(q, full, sizeof full, NULL) > 0)
            screen_line(sc, "  stalled: %s", full);
        for (int i = 0; i < nv; i++) {
            if (views[i].ended == 1)
                continue; /* said and done, or purged */
            screen_line(sc, "%s", views[i].bar);
            if (!views[i].ended)
                view_workers(sc, &views[i]);
            screen_events(sc, q, views[i].id, one ? 3 : !views[i].ended);
        }
        if (!one)
            screen_events(sc, q, "", 0);
        for (int k = 0; k < nh; k++)
            screen_line(sc, "  note: %s", hint[k]);
        fprintf(stderr, "\033[J");
    } else {
        int kinds = vrctl_hint_kinds(hint, nh);
        for (int k = 0; k < nh && (kinds & ~*hint_shown); k++) /* once, when one appears */
            log_say(LOG_WARN, "%s%s%s\n", one ? one : "", one ? ": " : "", hint[k]);
        *hint_shown = kinds;
    }
}

/* A job's end is said below the block: on a terminal watching every job,
 * its bar stays in the block (state shown) until all end. */
static void watch_ends(struct rq *q, const struct vrctl_screen *sc, struct vrctl_view *views,
                       int nv, struct rq_job_status *st, const char *one, int live,
                       enum log_level level)
{
    for (int i = 0; i < nv; i++) {
        if (views[i].ended != 2 || (sc->tty && !one && live))
            continue;
        log_set_level(level);
        if (rq_job_status(q, views[i].id, 0, st, NULL) == 0)
            views[i].rc = view_end(q, st);
        views[i].ended = 1;
    }
}

/* A watch, from one turn to the next. */
struct watch {
    struct rq *q;
    const char *one;              /* the job watched; NULL: every job */
    int hints;                    /* 1: liveness notes (vrctl_liveness_hints) */
    struct vrctl_view *views;
    int nv, fails, first, nh, hint_wait, hint_shown;
    struct vrctl_screen sc;
    struct rq_job_status *st;
    char (*ids)[48];
    char hint[2][200];
    enum log_level level;         /* the log level to give back */
    int pause_ms;                 /* between turns (WATCH_PAUSE_MS) */
    char woke[RQ_ID_MAX];         /* the job's newest event a pause woke for ("": none yet) */
    int no_wake;                  /* its events cannot be waited on (an ACL without XREAD) */
};

/* Between two turns, unless the watched job logs an event first. */
#define WATCH_PAUSE_MS 300
/* A turn at most this often: a burst of events is one redraw. */
#define WATCH_TURN_MIN_MS 50

enum { WATCH_NEXT, WATCH_RETRY, WATCH_END };

/* After a turn's figures: an outage's end noted, the hints, the screen,
 * the jobs that ended. WATCH_END with *rc once every job has, or is gone. */
static int watch_show(struct watch *w, int live, int gone, int *rc)
{
    struct vrctl_screen *sc = &w->sc;
    if (sc->outage_ms) {
        long long now = rq_now_ms();
        screen_note(sc, w->nv == 1 ? w->views[0].id : "", -1, NULL,
                    "Redis answers again after %.1f s", (now - sc->outage_ms) / 1000.0);
        sc->outage_ms = 0;
        sc->calm_ms = sc->now + 3000; /* let every worker beat once more */
    }
    if (gone) {
        *rc = vrctl_no_job(w->one);
        return WATCH_END;
    }
    if (w->hints && live && --w->hint_wait <= 0) { /* every ~2 s: a few round trips */
        w->nh = vrctl_liveness_hints(w->q, w->hint);
        w->hint_wait = 7;
    }
    w->nh = live ? w->nh : 0;
    watch_draw(sc, w->q, w->views, w->nv, w->one, w->hint, w->nh, &w->hint_shown);
    watch_ends(w->q, sc, w->views, w->nv, w->st, w->one, live, w->level);
    if (live)
        return WATCH_NEXT;
    for (int i = 0; i < w->nv; i++)
        *rc = w->views[i].rc > *rc ? w->views[i].rc : *rc;
    return WATCH_END;
}

/* One turn: the jobs, the workers and their figures read, then shown.
 * WATCH_RETRY after an outage (backed off already), WATCH_END with *rc. */
static int watch_turn(struct watch *w, int *rc)
{
    vr_err e = { 0 };
    int n = w->one ? 0 : vrctl_job_list(w->q, w->ids, VIEW_JOBS, &e);
    int ok = n >= 0;
    watch_join(w->q, w->views, &w->nv, w->ids, ok ? n : 0, w->st);
    if (!w->one && ok && w->first && w->nv == 0) {
        fprintf(stderr, "vrctl watch: no live jobs (vrctl status lists them all)\n");
        return WATCH_END;
    }
    w->first = 0;
    w->sc.nw = ok ? rq_workers_list(w->q, w->sc.w, VIEW_WORKERS, &e) : -1;
    ok = w->sc.nw >= 0;
    w->sc.now = rq_server_ms(w->q);
    int live = 0, gone = 0;
    if (ok)
        ok = watch_figures(w->q, &w->sc, w->views, w->nv, w->st, w->one, &e, &live, &gone);
    if (!ok) {
        if (++w->fails > 120) {
            *rc = cli_fail(2, "%s (gave up)", e.msg);
            return WATCH_END;
        }
        screen_outage(&w->sc, w->views, w->nv, e.msg);
        rq_backoff(w->q);
        return WATCH_RETRY;
    }
    w->fails = 0;
    return watch_show(w, live, gone, rc);
}

/* The pause between turns: for one job, until it logs an event (its end
 * among them: the "done" event follows the state), so that the watch, and
 * `vrctl run`, ends with the job instead of up to a pause later; else, or
 * where the events cannot be waited on, the whole pause. */
static void watch_pause(struct watch *w)
{
    double t0 = clock_mono_ms(), left = w->pause_ms;
    /* in reads of at most 2 s: well within the connection's 5 s timeout */
    for (int rc = 0; w->one && !w->no_wake && rc == 0 && left > 0;
         left = w->pause_ms - (clock_mono_ms() - t0)) {
        vr_err e = { 0 };
        int ms = left > 2000 ? 2000 : left < 1 ? 1 : (int)left; /* BLOCK 0: for ever */
        rc = rq_events_wait(w->q, w->one, w->woke, sizeof w->woke, ms, &e);
        w->no_wake = rc == VR_EINVAL;
        if (rc > 0) /* an event: the next turn now, or soon after the last */
            left = WATCH_TURN_MIN_MS - (clock_mono_ms() - t0);
        if (rc != 0)
            break;
    }
    if (left > 0)
        usleep((useconds_t)(left * 1000));
}

/* Watches job `one`, or with one NULL every job live now or submitted while
 * it runs, until they end. */
static int vrctl_watch_loop(struct rq *q, const char *one, volatile int *stop, int hints)
{
    struct watch *w = calloc(1, sizeof *w);
    if (!w)
        return cli_fail(1, "out of memory");
    *w = (struct watch){ .q = q, .one = one, .hints = hints, .first = 1,
                         .views = calloc(VIEW_JOBS, sizeof *w->views),
                         .sc = { .tty = isatty(2) && log_get_format() == LOG_TEXT,
                                 .cols = term_cols(2) },
                         .st = malloc(sizeof *w->st), .ids = calloc(VIEW_JOBS, 48),
                         .level = log_get_level(), .pause_ms = WATCH_PAUSE_MS };
    /* VR_TEST_WATCH_PAUSE_MS (tests only, 100-60000): a longer pause, so a
     * test sees whether the watch waits it out */
    const char *tp = getenv("VR_TEST_WATCH_PAUSE_MS");
    long tpm = tp ? strtol(tp, NULL, 10) : 0;
    if (tpm >= 100 && tpm <= 60000)
        w->pause_ms = (int)tpm;
    w->sc.w = calloc(VIEW_WORKERS, sizeof *w->sc.w);
    int rc = 0;
    if (!w->views || !w->st || !w->ids || !w->sc.w) {
        rc = cli_fail(1, "out of memory");
        goto out;
    }
    /* on a terminal the rq layer's "retrying" and "connected again" lines
     * are the display's own event lines; printed too, they pushed the block
     * down and the redraw left a stale copy above (vrctl run, whose
     * processes log through the same stderr, keeps them) */
    if (w->sc.tty && hints && w->level > LOG_ERROR)
        log_set_level(LOG_ERROR);
    if (one) {
        snprintf(w->views[0].id, sizeof w->views[0].id, "%s", one);
        w->views[0].last_done = -1;
        w->nv = 1;
        log_ctx_thread(one, -1);
    }
    for (int t = WATCH_NEXT; t != WATCH_END;) {
        if (stop && *stop) {
            rc = 3;
            break;
        }
        if ((t = watch_turn(w, &rc)) == WATCH_NEXT)
            watch_pause(w);
    }
out:
    log_set_level(w->level);
    log_ctx_thread(NULL, -1);
    free(w->sc.w);
    free(w->ids);
    free(w->st);
    free(w->views);
    free(w);
    return rc;
}

int vrctl_watch(struct rq *q, const char *id, volatile int *stop, int hints)
{
    return vrctl_watch_loop(q, id, stop, hints);
}

int vrctl_watch_all(struct rq *q, volatile int *stop)
{
    return vrctl_watch_loop(q, NULL, stop, 1);
}
