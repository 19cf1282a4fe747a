/*
 * ctl_stitch.c - the whole stitch of a job. While its chunks finish, a
 * running job's output is stitched ahead: as soon as chunk 0 is done the
 * controller opens the output (under a temporary name) and appends each
 * chunk that is done in order, so the stitch after the last chunk has only
 * the tail left to copy and check.
 *
 * The head start is not a second source of truth: ctl_stitch_finish takes
 * the stitcher over once it has claimed the job, and does the whole stitch
 * itself when there is none (another controller followed the job, this one
 * restarted, or an append failed). Nothing is published until the end
 * checks the file, so a stitcher dropped at any point leaves no output.
 * Chunks read in place (ranges) are stitched from their outputs and
 * sidecars alone; the copy split's from the source's timestamps.
 */
#include "ctl.h"

#include "beneath.h"
#include "clock.h"
#include "test_gate.h"
#include "log.h"
#include "remux.h"
#include "remux_ts.h"
#include "rq_fleetstats.h"
#include "rq_jobs.h"
#include "rq_stats.h"
#include "text.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CTL_MAX_STITCHES 32 /* jobs stitched ahead at once; more wait for their end */

struct ctl_stitch {
    char id[JOB_ID_MAX];
    struct remux_stitcher *s;
    struct job_spec js;
    struct ctl_paths files; /* the input and the output's directory it writes through */
    struct job_manifest man;
    int gave_up;            /* an append failed: the end stitches the whole job */
    int next;               /* the first chunk index not stitched yet */
    int elastic;            /* chunks start at some of the manifest's pieces (ctl_cut.c) */
};

static struct ctl_stitch *ctl_stitch_find(struct ctl *c, const char *id)
{
    for (int i = 0; i < c->nstitches; i++)
        if (!strcmp(c->stitches[i].id, id))
            return &c->stitches[i];
    return NULL;
}

static void ctl_stitch_remove(struct ctl *c, struct ctl_stitch *t)
{
    remux_stitch_abort(&t->s);
    ctl_paths_close(&t->files);
    job_manifest_release(&t->man);
    *t = c->stitches[--c->nstitches];
}

void ctl_stitch_drop(struct ctl *c, const char *id)
{
    struct ctl_stitch *t = ctl_stitch_find(c, id);
    if (t)
        ctl_stitch_remove(c, t);
}

void ctl_stitch_sweep(struct ctl *c)
{
    for (int i = 0; i < c->nstitches;) {
        struct ctl_stitch *t = &c->stitches[i];
        char state[32] = "";
        if (rq_job_state(c->q, t->id, state, sizeof state, NULL) < 0)
            return; /* Redis away: the next audit sweeps */
        if (!strcmp(state, "running")) {
            i++;
            continue;
        }
        if (state[0])
            log_info("job %s is %s: its stitch ahead and temporary output dropped", t->id, state);
        else
            ctl_lost_job(c, t->id);
        ctl_stitch_remove(c, t); /* the last entry moves into slot i */
    }
}

void ctl_stitch_drop_all(struct ctl *c)
{
    while (c->nstitches > 0)
        ctl_stitch_remove(c, &c->stitches[0]);
    free(c->stitches);
    c->stitches = NULL;
}

int ctl_chunk_output_ready(struct ctl *c, const char *id, int idx, int ranges, char *path,
                           size_t n)
{
    char ts[STORAGE_PATH_MAX + 8];
    if (c->storage_url[0])
        return ctl_chunk_url_ready(c, id, idx, ranges, path, n);
    ctl_chunk_path(c, id, "out", idx, path, n);
    if (access(path, R_OK) < 0)
        return 0;
    if (!ranges || (remux_ts_name(path, ts, sizeof ts, NULL) == 0 && access(ts, R_OK) == 0))
        return 1;
    snprintf(path, n, "%s", ts); /* the file missing is the sidecar: say so (issue 42) */
    return 0;
}

/* 1 when chunk idx's record says done (its output is checked apart). */
static int ctl_chunk_done(struct ctl *c, const char *id, int idx)
{
    char ck[128], state[16] = "";
    rq_key_chunk(ck, sizeof ck, id, idx);
    return rq_hget(c->q, ck, "state", state, sizeof state, NULL) > 0 && !strcmp(state, "done");
}

/* 1 when chunk idx is done and its output is on the storage. */
static int ctl_chunk_ready(struct ctl *c, const char *id, int idx, int ranges)
{
    char path[STORAGE_PATH_MAX];
    return ctl_chunk_done(c, id, idx) &&
           ctl_chunk_output_ready(c, id, idx, ranges, path, sizeof path);
}

int ctl_stitch_elastic(struct ctl *c, const char *id)
{
    long long ms = 0;
    return rq_job_number(c->q, id, "piece_ms", &ms, NULL) > 0 && ms > 0;
}

/* The first chunk at or after index `from` (n: none): every index is a
 * chunk, but an elastic job's are its pieces, of which chunks start at
 * those with a record (planned so, or cut there since: ctl_cut.c). */
static int ctl_chunk_next(struct ctl *c, const char *id, int from, int n, int elastic)
{
    for (int i = from; elastic && i < n; i++) {
        char ck[128], state[16] = "";
        rq_key_chunk(ck, sizeof ck, id, i);
        if (rq_hget(c->q, ck, "state", state, sizeof state, NULL) != 0)
            return i; /* a record, or Redis away: wait on it */
    }
    return elastic || from > n ? n : from;
}

static void ctl_stitch_sum_ready(struct ctl *c, const char *id, const struct job_manifest *man,
                                 int elastic, int from);

/* A new entry for a running job whose chunk 0 is done, with its stitcher
 * begun; NULL when it cannot start yet (or there is no room). The manifest
 * is read once, and only after Redis says chunk 0 is done: results come
 * for every chunk, and most arrive before chunk 0's. */
static struct ctl_stitch *ctl_stitch_start(struct ctl *c, const char *id)
{
    char mpath[STORAGE_PATH_MAX], out0[STORAGE_PATH_MAX];
    struct job_manifest man;
    if (c->nstitches >= CTL_MAX_STITCHES || !ctl_chunk_done(c, id, 0))
        return NULL;
    ctl_manifest_path(c, id, mpath, sizeof mpath);
    if (job_manifest_read(mpath, &man, NULL) < 0)
        return NULL;
    if (!ctl_chunk_output_ready(c, id, 0, man.ranges, out0, sizeof out0) ||
        (!c->stitches && !(c->stitches = calloc(CTL_MAX_STITCHES, sizeof *c->stitches)))) {
        job_manifest_release(&man);
        return NULL;
    }
    struct ctl_stitch *t = &c->stitches[c->nstitches];
    memset(t, 0, sizeof *t);
    snprintf(t->id, sizeof t->id, "%s", id);
    t->files.in = t->files.out_dir = -1;
    t->man = man; /* owned by the entry now */
    t->elastic = ctl_stitch_elastic(c, id);
    t->next = 0; /* the begin reads chunk 0's parameters; its add comes next */
    c->nstitches++;
    vr_err e = { 0 };
    int rc = ctl_jobfiles_spec(c, id, &t->js, &e);
    if (rc == 0)
        rc = ctl_paths_open(c, &t->js, CTL_PATHS_OUTPUT, &t->files, &e);
    if (rc == 0)
        rc = ctl_stitch_chunk(c, id, 0, &t->s, &t->js, &t->man, &t->files, &e);
    if (rc == CTL_CHUNK_DAMAGED) { /* begun again once it is recomputed */
        ctl_chunk_redo(c, id, 0);
        ctl_stitch_remove(c, t);
        return NULL;
    }
    if (rc < 0) {
        log_warn("job %s: cannot stitch ahead (%s); the whole stitch waits for the last chunk",
                 id, e.msg);
        ctl_paths_close(&t->files);
        t->gave_up = 1;
    }
    return t;
}

int ctl_stitch_mine(struct ctl *c, const char *id)
{
    char jk[128], owner[160] = "";
    rq_key_job(jk, sizeof jk, id);
    if (rq_hget(c->q, jk, "controller", owner, sizeof owner, NULL) < 0)
        return 0;
    if (!strcmp(owner, c->name))
        return 1;
    /* taken only when its holder's heartbeat key expired (or it has none) */
    return rq_job_claim(c->q, id, "", "running", c->name, NULL, NULL) == 1;
}

void ctl_stitch_progress(struct ctl *c, const char *id)
{
    char state[32] = "";
    if (rq_job_state(c->q, id, state, sizeof state, NULL) < 0)
        return;
    struct ctl_stitch *t = ctl_stitch_find(c, id);
    /* one stitch ahead per job, the holder's: every controller's audit
     * and result handling come here, and each stitched every job ahead
     * into a temp of its own (issue 26, finding 8) */
    if (strcmp(state, "running") || !ctl_stitch_mine(c, id)) {
        if (t)
            ctl_stitch_remove(c, t);
        return;
    }
    if (!t && !(t = ctl_stitch_start(c, id)))
        return;
    if (!t->gave_up)
        ctl_stitch_sum_ready(c, id, &t->man, t->elastic, t->next);
    while (!t->gave_up) {
        int next = ctl_chunk_next(c, id, t->next, t->man.nchunks, t->elastic);
        if (next >= t->man.nchunks || !ctl_chunk_ready(c, id, next, t->man.ranges))
            return;
        vr_err e = { 0 };
        int rc = ctl_stitch_chunk(c, id, next, &t->s, &t->js, &t->man, &t->files, &e);
        if (rc == CTL_CHUNK_DAMAGED) { /* the stitch waits for its recompute */
            ctl_chunk_redo(c, id, next);
            return;
        }
        if (rc < 0) {
            log_warn("job %s: stitching ahead stopped at chunk %d (%s); the whole stitch waits "
                     "for the last chunk", id, next, e.msg);
            remux_stitch_abort(&t->s);
            ctl_paths_close(&t->files);
            t->gave_up = 1;
        }
        t->next = next + 1;
    }
}

struct remux_stitcher *ctl_stitch_take(struct ctl *c, const char *id, struct ctl_paths *files,
                                       int *next)
{
    files->in = files->out_dir = -1;
    struct ctl_stitch *t = ctl_stitch_find(c, id);
    if (!t)
        return NULL;
    struct remux_stitcher *s = t->gave_up ? NULL : t->s;
    t->s = NULL;
    if (s) {
        *next = t->next;
        *files = t->files; /* the stitcher writes through its output directory */
        t->files.in = t->files.out_dir = -1;
    }
    ctl_stitch_remove(c, t);
    return s;
}

/* ---- the end: the whole stitch, checked and published ---- */

/* The chunk outputs' paths; how many are missing (a committed chunk whose
 * output vanished: the manifest, not the stream, says what must exist),
 * each queued again when `requeue`. Returns the count, or <0. */
static int ctl_chunk_outputs(struct ctl *c, const char *id, const struct job_manifest *man,
                             int elastic, char (*paths)[STORAGE_PATH_MAX], int requeue,
                             vr_err *err)
{
    int missing = 0;
    for (int i = ctl_chunk_next(c, id, 0, man->nchunks, elastic); i < man->nchunks;
         i = ctl_chunk_next(c, id, i + 1, man->nchunks, elastic)) {
        if (ctl_chunk_output_ready(c, id, i, man->ranges, paths[i], sizeof paths[i]))
            continue;
        missing++;
        if (!requeue)
            continue;
        log_warn("job %s: chunk %d is marked done but its output file %s is missing; requeued",
                 id, i, paths[i]);
        int rc = rq_chunk_requeue_lost(c->q, id, i, 1, err);
        if (rc < 0)
            return rc;
    }
    return missing;
}

/* Records done with the merged metrics under claim `token`. 1 done, 0 not,
 * <0. Not done because a cancel or a failure ended the job while the claim
 * was still this one's: nobody else can have published since, so the
 * output this controller just published is removed. Not done because
 * another controller claimed the job meanwhile (this one was paused past
 * its heartbeat between the publish check and the rename): the file at
 * the output's name may be the other's, so it is left alone; it is a
 * checked stitch of the same chunks either way. */
static int ctl_record_done(struct ctl *c, const char *id, long long token, const char *output,
                           const char *out_path, double stitch_s, vr_err *err)
{
    struct rq_job_status *st = malloc(sizeof *st);
    char *mjson = NULL;
    if (st && rq_job_status(c->q, id, 1, st, NULL) == 0 && st->have_metrics)
        mjson = metrics_to_string(&st->merged);
    free(st);
    /* VR_TEST_DONE_DELAY_MS (tests only): the output is published and the
     * job not yet done; a pause of this controller lands between the two */
    unsigned delay = clock_test_delay_ms("VR_TEST_DONE_DELAY_MS");
    if (delay)
        usleep(delay * 1000u);
    int held = 0;
    int rc = rq_job_done(c->q, id, c->name, token, stitch_s, mjson, &held, err);
    free(mjson);
    if (rc == 0) {
        char state[32] = "";
        rq_job_state(c->q, id, state, sizeof state, NULL);
        if (held) {
            log_warn("job %s was %s during its stitch; %s removed", id, state, output);
            ctl_url_out_remove(output, out_path);
        } else {
            log_warn("job %s: another controller took its stitch over while this one published "
                     "(the job is %s); %s left as it is", id, state, output);
        }
    }
    return rc;
}

/* Opens chunk i's output, its sidecar or its copied input beneath the
 * storage root: a regular file only, opened without waiting (a FIFO a
 * worker's user put there would block the loop for good); the
 * descriptor, its size in *size, its /proc/self/fd name in fdp and its
 * real name in real. A failure names the chunk. */
enum ctl_chunk_file { CTL_CHUNK_OUTPUT, CTL_CHUNK_SIDECAR, CTL_CHUNK_INPUT };

static int ctl_chunk_open(struct ctl *c, const char *id, int i, enum ctl_chunk_file which,
                          char *fdp, size_t nfdp, char *real, size_t nreal, long long *size,
                          vr_err *err)
{
    char rel[320], ts[320];
    ctl_chunk_rel(rel, sizeof rel, id, which == CTL_CHUNK_INPUT ? "in" : "out", i);
    if (which == CTL_CHUNK_SIDECAR) {
        if (remux_ts_name(rel, ts, sizeof ts, err) < 0)
            return VR_EINVAL;
        snprintf(rel, sizeof rel, "%s", ts);
    }
    storage_path(c->storage, rel, real, nreal, NULL);
    int fd = ctl_storage_open(c, rel, 0, fdp, nfdp, size, err);
    if (fd < 0)
        vr_err_prefix(err, "chunk %d", i);
    return fd;
}

/* The most bytes chunk i's output (or its sidecar) may hold: its frames
 * (the plan's count, else the one its commit recorded, at most the job's)
 * times a bound per frame, plus room for the container and the other
 * streams. A file over it is refused before a byte of it is read or
 * summed: an 8 GiB sparse file had kept the loop summing zeros for 25 s,
 * again on each requeue. */
static long long ctl_chunk_bytes_max(struct ctl *c, const char *id, int i,
                                     const struct job_manifest *man, int sidecar)
{
    long long frames = man->chunk_frames && man->chunk_frames[i] > 0 ? man->chunk_frames[i] : 0;
    long long whole = man->frames > 0 ? man->frames : 0;
    if (frames <= 0) { /* a range plan: what the commit said, at most the whole job's */
        char ck[128];
        rq_key_chunk(ck, sizeof ck, id, i);
        rq_hget_ll(c->q, ck, "frames", &frames, NULL);
        if (whole <= 0)
            rq_job_number(c->q, id, "frames_total", &whole, NULL);
        if (whole > 0 && frames > whole)
            frames = whole;
    }
    if (frames <= 0 || frames > JOB_CHUNK_FRAMES_MAX)
        frames = frames <= 0 ? 1 : JOB_CHUNK_FRAMES_MAX;
    return sidecar ? frames * JOB_TS_BYTES_PER_FRAME + JOB_CHUNK_BYTES_SLACK
                   : frames * JOB_FRAME_BYTES_MAX + JOB_CHUNK_BYTES_SLACK;
}

/* 1 when chunk i's file of `size` bytes is within its bound; 0 (said in
 * the log and the events, the chunk is computed again) when over it. */
static int ctl_chunk_size_ok(struct ctl *c, const char *id, int i,
                             const struct job_manifest *man, int sidecar, long long size,
                             const char *real)
{
    long long max = ctl_chunk_bytes_max(c, id, i, man, sidecar);
    if (size <= max)
        return 1;
    log_warn("job %s: chunk %d's %s %s is %lld bytes, more than its frames can hold (%lld): "
             "not read or summed; computed again", id, i, sidecar ? "sidecar" : "output", real,
             size, max);
    rq_event(c->q, id, "chunk %d: its %s is %lld bytes, more than its frames can hold; computed "
             "again", i, sidecar ? "sidecar" : "output", size);
    return 0;
}

/* 1 when chunk i's files (fd, and tfd when >= 0) are what its commit
 * summed, or the commit recorded no sum (a worker from before sums); 0
 * damaged (said in the log and the events); <0 unreadable. */
static int ctl_chunk_sum_ok(struct ctl *c, const char *id, int i, int fd, int tfd,
                            const char *real, vr_err *err)
{
    char ck[128], want[STORAGE_SUM_LEN] = "", got[STORAGE_SUM_LEN];
    rq_key_chunk(ck, sizeof ck, id, i);
    int rc = rq_hget(c->q, ck, "sum", want, sizeof want, err);
    if (rc <= 0 || !want[0])
        return rc < 0 ? rc : 1;
    int fds[2] = { fd, tfd };
    if (!ctl_sums_take(id, i, fd, tfd, got) &&
        (rc = storage_sum_fds(fds, tfd >= 0 ? 2 : 1, got, err)) < 0)
        return rc;
    if (!strcmp(want, got))
        return 1;
    log_warn("job %s: chunk %d's output %s does not match the checksum of its commit (damaged "
             "or truncated on the storage since); computed again, not stitched", id, i, real);
    rq_event(c->q, id, "chunk %d: its output does not match its checksum (damaged or truncated "
             "on the storage); computed again", i);
    return 0;
}

/* The chunks ready from index `from` on, up to the first that is not
 * (what the in-order copy can take now), summed side by side before it
 * copies them (ctl_stitch_sums.c). Files over their bound are left to the
 * copy, which refuses them unread; so is a store's (fetched by the copy). */
static void ctl_stitch_sum_ready(struct ctl *c, const char *id, const struct job_manifest *man,
                                 int elastic, int from)
{
    enum { MAX = 64 };
    int idx[MAX], fds[MAX][2], n = 0;
    char fdp[BENEATH_FD_PATH_MAX], real[STORAGE_PATH_MAX];
    if (c->storage_url[0])
        return;
    double t0 = clock_mono_s();
    for (int i = ctl_chunk_next(c, id, from, man->nchunks, elastic);
         n < MAX && i < man->nchunks && ctl_chunk_ready(c, id, i, man->ranges);
         i = ctl_chunk_next(c, id, i + 1, man->nchunks, elastic)) {
        long long size = 0, tsize = 0;
        int fd = ctl_chunk_open(c, id, i, CTL_CHUNK_OUTPUT, fdp, sizeof fdp, real, sizeof real,
                                &size, NULL);
        int tfd = fd >= 0 && man->ranges
                      ? ctl_chunk_open(c, id, i, CTL_CHUNK_SIDECAR, fdp, sizeof fdp, real,
                                       sizeof real, &tsize, NULL)
                      : -1;
        if (fd < 0 || (man->ranges && tfd < 0) || size > ctl_chunk_bytes_max(c, id, i, man, 0) ||
            (tfd >= 0 && tsize > ctl_chunk_bytes_max(c, id, i, man, 1))) {
            if (fd >= 0)
                close(fd);
            if (tfd >= 0)
                close(tfd);
            break;
        }
        idx[n] = i;
        fds[n][0] = fd;
        fds[n++][1] = tfd;
    }
    int kept = n >= 2 ? ctl_sums_ahead(id, idx, (const int (*)[2])fds, n) : 0;
    for (int k = 0; k < n; k++) {
        close(fds[k][0]);
        if (fds[k][1] >= 0)
            close(fds[k][1]);
    }
    if (kept)
        log_info("job %s: %d chunks summed side by side in %.2f s, ahead of their copy", id,
                 kept, clock_mono_s() - t0);
}

int ctl_chunk_redo(struct ctl *c, const char *id, int i)
{
    vr_err e = { 0 };
    int rc = rq_chunk_requeue_lost(c->q, id, i, 1, &e);
    if (rc < 0)
        log_warn("job %s: cannot queue chunk %d again: %s", id, i, e.msg);
    return rc;
}

int ctl_stitch_chunk(struct ctl *c, const char *id, int i, struct remux_stitcher **s,
                     const struct job_spec *js, const struct job_manifest *man,
                     const struct ctl_paths *p, vr_err *err)
{
    char fdp[BENEATH_FD_PATH_MAX], real[STORAGE_PATH_MAX];
    char tsp[BENEATH_FD_PATH_MAX], tsreal[STORAGE_PATH_MAX];
    int tfd = -1, ifd = -1, rc = 0, begun = *s == NULL;
    long long size = 0, tsize = 0;
    if (c->storage_url[0]) { /* a copy of the store's objects beneath the storage root */
        long long max[2] = { ctl_chunk_bytes_max(c, id, i, man, 0),
                             ctl_chunk_bytes_max(c, id, i, man, 1) };
        if ((rc = ctl_chunk_url_fetch(c, id, i, man->ranges, max, err)) != 0)
            return rc;
    }
    int fd = ctl_chunk_open(c, id, i, CTL_CHUNK_OUTPUT, fdp, sizeof fdp, real, sizeof real,
                            &size, err);
    if (fd < 0)
        return fd;
    /* a copied chunk's input places its frames if the decoder dropped some */
    char inp[BENEATH_FD_PATH_MAX], inreal[STORAGE_PATH_MAX];
    vr_err ie = { 0 };
    if (!man->ranges && *s)
        ifd = ctl_chunk_open(c, id, i, CTL_CHUNK_INPUT, inp, sizeof inp, inreal, sizeof inreal,
                             NULL, &ie);
    if (man->ranges && (tfd = ctl_chunk_open(c, id, i, CTL_CHUNK_SIDECAR, tsp, sizeof tsp, tsreal,
                                             sizeof tsreal, &tsize, err)) < 0)
        rc = tfd;
    else if (!ctl_chunk_size_ok(c, id, i, man, 0, size, real) ||
             (tfd >= 0 && !ctl_chunk_size_ok(c, id, i, man, 1, tsize, tsreal)))
        rc = CTL_CHUNK_DAMAGED;
    else if ((rc = ctl_chunk_sum_ok(c, id, i, fd, tfd, real, err)) <= 0)
        rc = rc < 0 ? rc : CTL_CHUNK_DAMAGED;
    else if (man->ranges) /* chunks read in place: the source only for what they cannot hold */
        rc = *s ? remux_stitch_add_ts(*s, fdp, tsp, err)
                : remux_stitch_begin_ranges(p->in_path, fdp, tsp, man->nchunks, p->out_path, s,
                                            err);
    else
        rc = *s ? remux_stitch_add(*s, fdp, ifd >= 0 ? inp : NULL, err)
                : remux_stitch_begin(p->in_path, fdp, man->chunk_frames, man->nchunks,
                                     p->out_path, s, err);
    if (rc == 0 && i == 0 && *s) /* its temp private from the start (ctl_paths_owner.c) */
        remux_stitch_publish_as(*s, &p->pub);
    beneath_unmask(err, fd, real);
    if (tfd >= 0) {
        beneath_unmask(err, tfd, tsreal);
        close(tfd);
    }
    if (ifd >= 0) {
        beneath_unmask(err, ifd, inreal);
        close(ifd);
    }
    ctl_paths_unmask(p, js, err);
    close(fd);
    if (rc == 0)
        ctl_loop_pulse(c); /* a long stitch going on chunk by chunk is not a stuck loop */
    /* what the output leaves out of the source goes to the job's events,
     * under the output's name (the stitcher knows it by its fd path) */
    if (rc == 0 && begun && *s && remux_stitch_note(*s)[0]) {
        log_warn("job %s: %s: %s", id, js->output, remux_stitch_note(*s));
        rq_event(c->q, id, "stitch: %s: %s", js->output, remux_stitch_note(*s));
    }
    return rc;
}

/* What the publish check needs (remux_publish_fn). */
struct ctl_claim {
    struct ctl *c;
    const char *id;
    long long token;
};

/* The fencing at the one step a file system cannot undo: the checked
 * output replaces whatever lies at its name only while this controller
 * still holds the job's stitch under its claim. */
static int ctl_may_publish(void *ctx, vr_err *err)
{
    const struct ctl_claim *k = ctx;
    int rc = rq_job_holds(k->c->q, k->id, "stitching", k->c->name, k->token, err);
    if (rc == 0)
        vr_err_set(err, VR_ECANCELED, "job %s is no longer this controller's stitch (claimed by "
                   "another controller, or ended)", k->id);
    /* VR_TEST_PUBLISH_DELAY_MS (tests only): a stall between the check and
     * the rename, said in the log so that a test can stop the controller
     * inside it */
    unsigned delay = rc > 0 ? clock_test_delay_ms("VR_TEST_PUBLISH_DELAY_MS") : 0;
    if (delay) {
        log_info("job %s: test hook: %u ms between the publish check and the rename", k->id,
                 delay);
        usleep(delay * 1000u);
    }
    return rc;
}

/* Stitches what the stitcher taken over from the ahead part has not yet
 * (the whole job when there is none) and publishes the checked output;
 * *ahead gets the chunks that were in already, *frames the frames written.
 * *p is the job's files, or those the stitcher was begun with (taken over
 * with it). */
static int ctl_stitch_rest(struct ctl *c, const char *id, long long token,
                           const struct job_spec *js, const struct job_manifest *man,
                           int elastic, struct ctl_paths *p, int *ahead, long long *frames,
                           int *damaged, vr_err *err)
{
    struct ctl_paths taken;
    int next = 0;
    struct remux_stitcher *s = ctl_stitch_take(c, id, &taken, &next);
    int rc = 0, i = 0;
    if (s) {
        ctl_paths_close(p);
        *p = taken;
    } else if ((rc = ctl_stitch_chunk(c, id, 0, &s, js, man, p, err)) != 0) {
        *damaged = 0;
        return rc;
    }
    *ahead = remux_stitch_added(s);
    ctl_stitch_sum_ready(c, id, man, elastic, next);
    for (i = ctl_chunk_next(c, id, next, man->nchunks, elastic); rc == 0 && i < man->nchunks;
         i = rc == 0 ? ctl_chunk_next(c, id, i + 1, man->nchunks, elastic) : i)
        rc = ctl_stitch_chunk(c, id, i, &s, js, man, p, err);
    if (rc == CTL_CHUNK_DAMAGED)
        *damaged = i;
    if (rc == 0 && elastic) /* the chunks were fewer than the pieces */
        remux_stitch_expect(s, remux_stitch_added(s));
    if (rc == 0) {
        *frames = remux_stitch_frames(s);
        struct ctl_claim k = { c, id, token };
        remux_stitch_publish_as(s, &p->pub); /* -n, owner and mode: ctl_paths_owner.c */
        rc = remux_stitch_end_if(&s, ctl_may_publish, &k, err);
        if (rc == 0)
            rc = ctl_url_out_publish(js, p, err);
        ctl_paths_unmask(p, js, err);
        return rc;
    }
    remux_stitch_abort(&s);
    return rc;
}

/* A chunk found damaged at the stitch: the job runs again (a worker skips
 * a chunk of a job that is not running) and the chunk is queued again; the
 * stitch comes back when it is recomputed. */
static int ctl_stitch_redo(struct ctl *c, const char *id, long long token, int idx)
{
    vr_err e = { 0 };
    int rc = rq_job_reopen(c->q, id, c->name, token, &e);
    if (rc > 0)
        ctl_chunk_redo(c, id, idx);
    return rc < 0 ? e.code : 0;
}

/* ---- a job's finish, step by step ---- */

/* Whether the job is due for its stitch and this controller claimed it:
 * 1 with *total and *token set, else what ctl_stitch_finish returns. */
static int ctl_finish_claim(struct ctl *c, const char *id, long long *total, long long *token)
{
    vr_err e = { 0 };
    long long done = 0;
    if (rq_job_number(c->q, id, "chunks_done", &done, &e) < 0 ||
        rq_job_number(c->q, id, "chunks_total", total, &e) < 0)
        return e.code;
    if (*total <= 0 || done < *total)
        return 0;
    /* a running job is stitched by its holder, whose stitch ahead it
     * continues (a stitching one by whoever takes a dead holder's over) */
    char state[32] = "";
    if (rq_job_state(c->q, id, state, sizeof state, &e) < 0)
        return e.code;
    if (!strcmp(state, "running") && !ctl_stitch_mine(c, id))
        return 0;
    *token = 0;
    return rq_job_claim(c->q, id, "running", "stitching", c->name, token, &e);
}

/* The stitch itself, under the claim: 1 when the output is there to be
 * recorded done, else 0 with *rc what ctl_stitch_finish returns. */
static int ctl_finish_stitch(struct ctl *c, const char *id, long long token,
                             const struct job_spec *js, struct job_manifest *man, int elastic,
                             struct ctl_paths *files, int *ahead, long long *frames, int *rc,
                             vr_err *e)
{
    if ((*rc = ctl_paths_open(c, js, CTL_PATHS_OUTPUT, files, e)) == 0 &&
        (*rc = rq_job_holds(c->q, id, "stitching", c->name, token, e)) == 0) {
        /* paused past its heartbeat (the delay above in tests): another
         * controller claimed the stitch and may be writing its temp now */
        log_warn("job %s: its stitch was claimed by another controller meanwhile; left to it",
                 id);
        return 0;
    }
    if (*rc > 0) {
        /* this controller holds the stitch now: another's temporary output
         * (a controller killed mid-stitch, or one that lost its claim) is
         * abandoned, and nothing else would ever remove it */
        char base[JOB_PATH_MAX];
        snprintf(base, sizeof base, "%s", js->output);
        storage_drop_temps_of(files->out_dir, basename(base));
        int damaged = -1;
        *rc = ctl_stitch_rest(c, id, token, js, man, elastic, files, ahead, frames,
                              &damaged, e);
        if (*rc == CTL_CHUNK_DAMAGED) {
            *rc = ctl_stitch_redo(c, id, token, damaged);
            return 0;
        }
    }
    if (*rc == VR_ECANCELED) {
        log_warn("job %s: %s; its temporary output removed", id, e->msg);
        *rc = 0;
        return 0;
    }
    if (*rc == VR_EREDIS) { /* the job stays stitching under this controller: the audit redoes it */
        log_warn("job %s: stitch stopped, nothing published: Redis did not answer (%s); the "
                 "audit stitches again", id, e->msg);
        return 0;
    }
    if (*rc < 0) {
        vr_err_prefix(e, "stitch");
        *rc = ctl_jobfiles_fail(c, id, token, e->msg);
        return 0;
    }
    return 1;
}

/* The stitched output recorded done, and said: 1, or what ctl_stitch_finish
 * returns when the record did not go through. */
static int ctl_finish_record(struct ctl *c, const char *id, long long token,
                             const struct job_spec *js, const struct ctl_paths *files,
                             long long frames, int ahead, long long total, double stitch_s)
{
    vr_err e = { 0 };
    int rc;
    char fr[32];
    snprintf(fr, sizeof fr, "%lld", frames);
    rq_job_note(c->q, id, "frames_total", fr, NULL); /* a range plan may not have known it */
    if ((rc = ctl_record_done(c, id, token, js->output, files->out_path, stitch_s, &e)) <= 0) {
        if (rc < 0) /* the job stays stitching under this controller: the audit redoes it */
            log_warn("job %s: %s published but not recorded done: %s; the audit stitches again",
                     id, js->output, e.msg);
        return rc < 0 ? e.code : 0;
    }
    log_info("job %s: done: %s (%lld frames; %d of %d chunks stitched ahead, the rest in %.2f s)",
             id, js->output, frames, ahead, (int)total, stitch_s);
    rq_event(c->q, id, "done: %s", js->output);
    rq_fleetstats_note(c->q, RQ_NOTE_STITCH, stitch_s, NULL);
    return 1; /* its chunk files go once the done is durable (ctl_cleanup_due) */
}

int ctl_stitch_finish(struct ctl *c, const char *id)
{
    vr_err e = { 0 };
    long long total = 0, token = 0;
    int rc = ctl_finish_claim(c, id, &total, &token);
    if (rc <= 0)
        return rc;
    struct job_spec js;
    if ((rc = ctl_jobfiles_spec(c, id, &js, &e)) < 0)
        return rc == VR_EREDIS ? rc : ctl_jobfiles_fail(c, id, token, e.msg);
    char mpath[STORAGE_PATH_MAX];
    ctl_manifest_path(c, id, mpath, sizeof mpath);
    struct job_manifest man;
    if ((rc = job_manifest_read(mpath, &man, &e)) < 0)
        return ctl_jobfiles_fail(c, id, token, e.msg);
    struct ctl_paths files = { .in = -1, .out_dir = -1 };
    char (*paths)[STORAGE_PATH_MAX] = calloc((size_t)man.nchunks, sizeof *paths);
    if (!paths) {
        rc = ctl_jobfiles_fail(c, id, token, "out of memory");
        goto out;
    }
    int elastic = ctl_stitch_elastic(c, id);
    if (ctl_chunk_outputs(c, id, &man, elastic, paths, 0, &e) > 0) {
        /* the job runs again before its lost chunks are queued: a worker
         * skips a chunk of a job that is not running (it was, stitching) */
        ctl_stitch_drop(c, id);
        rc = rq_job_reopen(c->q, id, c->name, token, &e);
        if (rc > 0)
            rc = ctl_chunk_outputs(c, id, &man, elastic, paths, 1, &e);
        rc = rc < 0 ? e.code : 0;
        goto out;
    }
    rq_event(c->q, id, "stitching %lld chunk%s into %s", total, text_plural((int)total),
             js.output);
    unsigned delay = clock_test_delay_ms("VR_TEST_STITCH_DELAY_MS"); /* tests only */
    if (delay)
        usleep(delay * 1000u);
    test_gate("VR_TEST_STITCH_GATE", "the stitch"); /* tests only */
    double t0 = clock_mono_s();
    int ahead = 0;
    long long frames = man.frames;
    if (ctl_finish_stitch(c, id, token, &js, &man, elastic, &files, &ahead, &frames, &rc, &e))
        rc = ctl_finish_record(c, id, token, &js, &files, frames, ahead, total,
                               clock_mono_s() - t0);
out:
    ctl_paths_close(&files);
    free(paths);
    job_manifest_release(&man);
    return rc;
}
