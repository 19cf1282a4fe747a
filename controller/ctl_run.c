/*
 * ctl_run.c - `vr-controller run`: options, connection (waiting for Redis
 * with backoff), the heartbeat thread, the webhook thread (ctl_notify.c),
 * the reports thread (ctl_reports.c), the stitch thread
 * (ctl_stitch_thread.c) and the main loop (see ctl.h).
 */
#include "ctl.h"

#include "cmdtable.h"
#include "clock.h"
#include "http_io.h"
#include "job.h"
#include "log.h"
#include "rq_bounds.h"
#include "rq_fleet.h"
#include "rq_opts.h"
#include "storage.h"

#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t ctl_stop;

static void ctl_on_signal(int sig)
{
    (void)sig;
    ctl_stop = 1;
}

/* ---- heartbeat: vr:controller:<name> with a TTL, so others can tell a
 * dead controller's half-done split or stitch from a slow one ---- */

struct ctl_hb {
    struct ctl *c;
    pthread_t th;
    int started;
};

/* The heartbeat says the controller works, not only that its process
 * lives: while the loop is stuck (a blocking open, a huge file summed)
 * the key is removed, so another controller takes its jobs over (their
 * claims fence this one's late writes), and renewed once it turns again. */
static void ctl_hb_beat(struct rq *q, struct ctl *c, int *withheld)
{
    double stuck = ctl_loop_stalled(c);
    if (stuck > 0) {
        if (!*withheld)
            log_error("controller %s: its loop has not turned for %.0f s (--loop-stall-seconds "
                      "%.0f): heartbeat withdrawn so another controller takes over", c->name,
                      stuck, c->stall_ms / 1000.0);
        *withheld = 1;
        rq_controller_gone(q, c->name, NULL);
        return;
    }
    if (*withheld)
        log_info("controller %s: its loop turns again; heartbeat back", c->name);
    *withheld = 0;
    rq_controller_heartbeat(q, c->name, c->hb_ttl_ms, NULL);
}

static void *ctl_hb_main(void *arg)
{
    struct ctl_hb *hb = arg;
    struct rq *q = NULL;
    int withheld = 0;
    rq_open(hb->c->url, 5000, &q, NULL);
    while (!ctl_stop && q) {
        ctl_hb_beat(q, hb->c, &withheld);
        for (int i = 0; i < hb->c->hb_ttl_ms / 500 && !ctl_stop; i++)
            usleep(100000); /* a fifth of the TTL: 2 s by default */
    }
    if (q)
        rq_controller_gone(q, hb->c->name, NULL);
    rq_free(&q);
    return NULL;
}

/* ---- setup ---- */

static void ctl_name(char *buf, size_t n)
{
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    unsigned char r[4] = { 0 };
    if (getrandom(r, sizeof r, 0) != sizeof r)
        r[0] = (unsigned char)getpid();
    snprintf(buf, n, "%s:ctl:%02x%02x%02x%02x", host, r[0], r[1], r[2], r[3]);
}

/* ---- loop ---- */

static void ctl_handle(struct ctl *c, struct rq_msg *m)
{
    const char *job = rq_msg_get(m, "job");
    if (!job || !job_id_valid(job)) {
        log_error("%s %s: entry without a valid job id; acknowledged and skipped", m->stream, m->id);
    } else if (!strcmp(m->stream, RQ_JOBS)) {
        log_ctx_thread(job, -1);
        ctl_job_start(c, job);
    } else {
        const char *idx = rq_msg_get(m, "idx"), *kind = rq_msg_get(m, "kind");
        const char *entry = rq_msg_get(m, "entry");
        long i;
        char why[160];
        if (idx && kind && cli_parse_long("result idx", idx, 0, 1 << 30, &i, why, sizeof why) == 0) {
            log_ctx_thread(job, (int)i);
            ctl_result(c, job, (int)i, kind, entry ? entry : "");
        } else {
            log_error("%s %s: %s; acknowledged and skipped", m->stream, m->id,
                      idx && kind ? why : "result without idx or kind");
        }
    }
    log_ctx_thread(NULL, -1);
    rq_ack(c->q, m->stream, RQ_G_CONTROLLERS, m->id, NULL);
}

/* Temporary files that ENOSPC or a kill -9 left under <storage>/jobs are
 * never committed by anyone: removed at start once their owner's lease
 * (its heartbeat key) has lapsed by Redis's clock; a temp of a controller
 * or worker alive elsewhere, or on a host whose clock is skewed, is kept
 * (storage.h, "temporaries owned"). */
static void ctl_sweep_temps(struct ctl *c)
{
    char jobs[STORAGE_PATH_MAX];
    vr_err e = { 0 };
    long long n = 0;
    if (storage_path(c->storage, "jobs", jobs, sizeof jobs, &e) < 0 ||
        storage_sweep_temps(jobs, ctl_temp_owner_live, c, &n, &e) < 0)
        log_warn("%s", e.msg);
    else if (n)
        log_info("storage %s: %lld leftover temporary files removed", c->storage, n);
}

/* Cuts vr:reports to its cap before its backlog is read: a flood from a
 * worker's user is thousands of reports, each a few round trips to handle,
 * and reading it all first held the cut (and the reclaims) back by tens of
 * seconds on a loaded host. A fleet's own reports never come near the cap. */
static void ctl_reports_cap(struct ctl *c)
{
    long long dropped = rq_reports_cap(c->q, NULL);
    if (dropped > 0)
        log_warn("%s: %lld report(s) over its cap of %d dropped, the oldest (a flood from a "
                 "worker's user?)", RQ_REPORTS, dropped, RQ_REPORTS_MAXLEN);
}

/* Reports handled a turn before the reclaim, in batches, for at most
 * this long: a backlog (a flood) is read over several turns, each cutting
 * the stream first, so the cut never waits for the whole backlog (8000
 * flood reports read before the cut took over 30 s on a loaded 2-core
 * host). */
#define CTL_REPORTS_BATCH    256
#define CTL_REPORTS_DRAIN_MS 500

/* Reclaims lapsed leases when the last reclaim is a quarter lease (at most
 * a second) ago. The reports waiting are handled first: a renewal still
 * unread (the loop was busy with a stitch, or Redis was away) must not
 * leave its lease looking lapsed. */
static void ctl_reclaim_due(struct ctl *c)
{
    long long every = c->lease_ms / 4 < 1000 ? c->lease_ms / 4 : 1000;
    long long now = (long long)clock_mono_ms();
    if (now - c->last_reclaim_ms >= every) {
        ctl_reports_cap(c);
        while (ctl_reports_drain(c, CTL_REPORTS_BATCH) >= CTL_REPORTS_BATCH)
            if ((long long)clock_mono_ms() - now > CTL_REPORTS_DRAIN_MS)
                return; /* still more: the next turn cuts again and reclaims */
        ctl_reclaim(c);
        c->last_reclaim_ms = now;
    }
}

/* At most this many results a call: a split goes on between the calls. */
#define CTL_POLL_MAX 64

/* Between the chunks of a copy split (struct ctl.between_chunks): handles
 * the results already waiting, without blocking, and reclaims lapsed
 * leases when one is due, so a long source being cut does not hold up the
 * fleet's results, stitches and reclaims. New jobs wait for the loop (a
 * split never starts another). */
static void ctl_poll_results(struct ctl *c)
{
    const char *streams[] = { RQ_RESULTS };
    for (int i = 0; i < CTL_POLL_MAX && !ctl_stop; i++) {
        struct rq_msg m;
        if (rq_read(c->q, RQ_G_CONTROLLERS, c->name, streams, 1, 0, &m, NULL) != 1)
            break; /* none waiting, or Redis trouble the split meets next */
        ctl_handle(c, &m);
        rq_msg_release(&m);
    }
    ctl_reclaim_due(c);
    ctl_loop_pulse(c); /* a split going on chunk by chunk is not a stuck loop */
}

static int ctl_loop(struct ctl *c)
{
    const char *streams[] = { RQ_JOBS, RQ_RESULTS };
    long long last_audit = 0;
    unsigned audits = 0;
    int down = 0;
    log_info("controller %s: ready (storage %s, inputs under %s, outputs under %s, lease %.1f s)",
             c->name, c->storage, c->input_root, c->output_root, c->lease_ms / 1000.0);
    while (!ctl_stop) {
        ctl_loop_pulse(c);
        struct rq_msg m[2];
        vr_err e = { 0 };
        int rc = rq_read_all(c->q, RQ_G_CONTROLLERS, c->name, streams, 2, c->read_block_ms, m,
                             &e);
        if (rc < 0) {
            if (!down)
                log_warn("%s; retrying", e.msg);
            down = 1;
            rq_backoff(c->q);
            if (strstr(e.msg, "NOGROUP"))
                rq_ready(&c->q, c->url, NULL, &ctl_stop, NULL);
            continue;
        }
        down = 0;
        for (int i = 0; i < rc; i++) {
            ctl_handle(c, &m[i]);
            rq_msg_release(&m[i]);
        }
        ctl_reclaim_due(c);
        ctl_cut_turn(c); /* idle workers and no chunk waiting: a running one is cut */
        long long now = (long long)clock_mono_ms();
        if (now - last_audit >= 1000) {
            ctl_audit(c, audits++ % 5 == 0);
            ctl_submitters_intake(c);
            last_audit = now;
        }
    }
    log_info("controller %s: stopping; redis round trips: %lld in the loop", c->name,
             rq_round_trips(c->q));
    return 0;
}

/* A root directory resolved once (links in the root's own path are the
 * operator's choice; none below it is followed). */
static int ctl_root(const char *what, const char *dir, char *out)
{
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
        return cli_fail(-1, "%s %s is not a directory", what, dir);
    if (!realpath(dir, out))
        return cli_fail(-1, "cannot resolve %s %s", what, dir);
    return 0;
}

/* ---- the command, step by step ---- */

/* What the options gave, before it is checked and resolved. */
struct ctl_args {
    struct rq_opts ro; /* --redis, --storage, --input-root, ... (rq_opts.h) */
    const char *out_root, *metrics_listen, *secret_file;
    double lease, stall;
};

/* The notification defaults, and the test hooks that shorten them. */
static void ctl_defaults(struct ctl *c, struct ctl_args *a)
{
    a->lease = 30;
    a->stall = CTL_LOOP_STALL_S;
    c->keep_jobs_ms = CTL_KEEP_JOBS_DEFAULT_MS;
    c->max_chunks = CTL_MAX_CHUNKS;
    c->notify.timeout_s = 10;
    c->notify.max_attempts = 20;
    unsigned test_retry = clock_test_delay_ms("VR_TEST_NOTIFY_RETRY_MS"); /* tests only */
    c->notify.retry_ms = test_retry ? test_retry : CTL_NOTIFY_RETRY_MS;
    const char *tpp = getenv("VR_TEST_NOTIFY_PUBLIC_PORT"); /* tests only */
    c->notify.test_public_port = tpp ? atoi(tpp) : 0;
    const char *tre = getenv("VR_TEST_RETAIN_EACH_AUDIT"); /* tests only */
    c->retain_each_audit = tre && !strcmp(tre, "1");
    /* VR_TEST_CTL_HB_TTL_MS (tests only, 1000-10000): a killed controller's
     * key lapses sooner, for the tests of who is alive */
    const char *ttl = getenv("VR_TEST_CTL_HB_TTL_MS");
    long t = ttl ? strtol(ttl, NULL, 10) : 0;
    c->hb_ttl_ms = t >= 1000 && t <= CTL_HB_TTL_MS ? (int)t : CTL_HB_TTL_MS;
    /* VR_TEST_CTL_READ_BLOCK_MS (tests only, 500-60000): the loop's read
     * blocks that long, so a test sees whether a stop waits for it */
    const char *blk = getenv("VR_TEST_CTL_READ_BLOCK_MS");
    long b = blk ? strtol(blk, NULL, 10) : 0;
    c->read_block_ms = b >= 500 && b <= 60000 ? (int)b : CTL_READ_BLOCK_MS;
}

/* One option of the controller's own (not the shared block): 0, or the
 * exit code (the usage error said). */
static int ctl_option(struct ctl *c, struct ctl_args *a, int o)
{
    vr_err ne = { 0 };
    switch (o) {
    case 'l':
        if (cli_opt_double("--lease-seconds", optarg, 0.5, 86400, &a->lease))
            return 2;
        break;
    case 'k': c->keep_chunks = 1; break;
    case 'K': {
        double keep_s;
        if (cli_opt_duration("--keep-jobs", optarg, 3650 * 86400.0, &keep_s))
            return 2;
        c->keep_jobs_ms = (long long)(keep_s * 1000);
        break;
    }
    case 'O': /* a URL: a prefix for URL outputs; files stay under the storage root */
        if (!url_root_is_url(optarg))
            a->out_root = optarg;
        else if (url_root_norm(optarg, c->output_url_root, sizeof c->output_url_root, &ne) < 0)
            return cli_usage_error("--output-root: %s", ne.msg);
        break;
    case 'M': a->metrics_listen = optarg; break;
    case 'N':
        if (job_notify_check(optarg, &ne) < 0)
            return cli_usage_error("--notify %s: %s", optarg, ne.msg);
        snprintf(c->notify.url, sizeof c->notify.url, "%s", optarg);
        break;
    case 'S': a->secret_file = optarg; break;
    case 'T':
        if (cli_opt_double("--notify-timeout", optarg, 0.5, 300, &c->notify.timeout_s))
            return 2;
        break;
    case 'A':
        if (cli_opt_int("--notify-attempts", optarg, 1, 1000, &c->notify.max_attempts))
            return 2;
        break;
    case 'P': c->notify.allow_private = 1; break;
    case 'L':
        if (cli_opt_double("--loop-stall-seconds", optarg, 1, 86400, &a->stall))
            return 2;
        break;
    case 'C':
        if (cli_opt_int("--max-chunks", optarg, 1, JOB_MAX_CHUNKS, &c->max_chunks))
            return 2;
        break;
    case 'U': return ctl_submitter_option(c, optarg);
    default: return 2; /* '?': cli_getopt said why */
    }
    return 0;
}

/* The options into c and a, checked: 0, or the exit code (said). */
static int ctl_options(int argc, char **argv, struct ctl *c, struct ctl_args *a)
{
    static const struct option opts[] = {
        RQ_LONGOPTS_REDIS,
        RQ_LONGOPTS_STORAGE,
        { "lease-seconds", required_argument, 0, 'l' },
        { "keep-chunks", no_argument, 0, 'k' },
        { "keep-jobs", required_argument, 0, 'K' },
        { "output-root", required_argument, 0, 'O' },
        { "metrics-listen", required_argument, 0, 'M' },
        { "notify", required_argument, 0, 'N' },
        { "notify-secret-file", required_argument, 0, 'S' },
        { "notify-timeout", required_argument, 0, 'T' },
        { "notify-attempts", required_argument, 0, 'A' },
        { "notify-allow-private", no_argument, 0, 'P' },
        { "loop-stall-seconds", required_argument, 0, 'L' },
        { "max-chunks", required_argument, 0, 'C' },
        { "submitter", required_argument, 0, 'U' },
        { 0, 0, 0, 0 }
    };
    vr_err ne = { 0 };
    int o, rc;
    while ((o = cli_getopt(argc, argv, "", opts)) != -1) {
        rc = rq_opts_take(&a->ro, o, optarg);
        if (!rc)
            rc = ctl_option(c, a, o);
        else if (rc == 1)
            rc = 0;
        if (rc)
            return rc;
    }
    if (optind < argc)
        return cli_usage_error("unexpected argument '%s'", argv[optind]);
    if ((rc = rq_opts_check(&a->ro, RQ_NEED_DIR)))
        return rc;
    if (a->ro.allow_private)
        http_io_configure_private(1);
    snprintf(c->input_url_root, sizeof c->input_url_root, "%s", a->ro.input_url_root);
    snprintf(c->storage_url, sizeof c->storage_url, "%s", a->ro.storage_url);
    if (ctl_notify_secret(a->secret_file, &c->notify, &ne) < 0)
        return cli_usage_error("%s", ne.msg);
    return 0;
}

/* The roots, the name and the signals: 0, or 1 with the reason said. */
static int ctl_setup(struct ctl *c, const struct ctl_args *a)
{
    const char *storage = a->ro.storage, *in_root = a->ro.input_root, *out_root = a->out_root;
    if (ctl_root("storage root (--storage)", storage, c->storage) < 0 ||
        ctl_root("input root (--input-root)", in_root ? in_root : storage, c->input_root) < 0 ||
        ctl_root("output root (--output-root)", out_root ? out_root : storage, c->output_root) < 0)
        return 1;
    snprintf(c->url, sizeof c->url, "%s", a->ro.redis);
    c->lease_ms = (long long)(a->lease * 1000);
    c->stall_ms = (long long)(a->stall * 1000);
    c->between_chunks = ctl_poll_results;
    ctl_name(c->name, sizeof c->name);
    char owner[sizeof c->name + 2];
    snprintf(owner, sizeof owner, "c:%s", c->name);
    if (storage_temp_owner_set(owner) < 0) /* a host name of other characters */
        log_warn("controller %s: its temporary files carry no owner and are never swept", c->name);
    c->stop = &ctl_stop;
    struct sigaction sa = { 0 };
    sa.sa_handler = ctl_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    return 0;
}

/* Redis, the sweeps, the threads and the loop, then the teardown: the
 * loop's exit code. */
static int ctl_run(struct ctl *c, struct ctl_prom *prom)
{
    vr_err ne = { 0 };
    if (rq_ready(&c->q, c->url, NULL, &ctl_stop, NULL) < 0) {
        ctl_prom_stop(&prom);
        rq_free(&c->q);
        return 1;
    }
    ctl_sweep_temps(c);   /* both need Redis: the owners' leases, the jobs */
    ctl_sweep_outputs(c);
    ctl_loop_pulse(c);
    ctl_prom_watch(prom, c);
    struct ctl_hb hb = { .c = c };
    hb.started = pthread_create(&hb.th, NULL, ctl_hb_main, &hb) == 0;
    struct ctl_notify *notify = NULL;
    if (ctl_notify_start(c, &notify, &ne) < 0)
        log_error("%s; job ends are not notified by this controller", ne.msg);
    struct ctl_reports *reports = NULL;
    if (ctl_reports_start(c, &reports, &ne) < 0) /* the loop drains them: slower, not lost */
        log_error("%s; the workers' reports are read between the loop's turns", ne.msg);
    if (ctl_stitcher_start(c, &ne) < 0) /* the loop stitches: slower turns, same jobs */
        log_error("%s; jobs are stitched on the loop", ne.msg);
    if (ctl_chunk_gc_start(c, &ne) < 0)
        log_error("%s; chunk objects are deleted on the loop", ne.msg);
    int rc = ctl_loop(c);
    ctl_reports_stop(&reports);
    ctl_chunk_gc_stop(c);
    ctl_stitcher_stop(c);
    ctl_stitch_drop_all(c);
    if (hb.started)
        pthread_join(hb.th, NULL);
    ctl_notify_stop(&notify);
    explicit_bzero(c->notify.secret, sizeof c->notify.secret);
    ctl_prom_stop(&prom);
    rq_free(&c->q);
    return rc;
}

int cmd_controller_run(int argc, char **argv)
{
    struct ctl c = { 0 };
    struct ctl_args a = { 0 };
    ctl_defaults(&c, &a);
    int rc = ctl_options(argc, argv, &c, &a);
    if (rc)
        return rc;
    if (ctl_setup(&c, &a))
        return 1;
    /* Served before Redis is reached: a bad address is said at once, and
     * /healthz answers 503 while the controller waits for Redis. */
    struct ctl_prom *prom = NULL;
    if (a.metrics_listen) {
        vr_err e = { 0 };
        if (ctl_prom_start(a.metrics_listen, c.url, &prom, &e) < 0) {
            cli_fail(1, "%s", e.msg);
            return e.code == VR_EINVAL ? 2 : 1;
        }
    }
    return ctl_run(&c, prom);
}
