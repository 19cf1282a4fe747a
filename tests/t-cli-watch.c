/*
 * t-cli-watch.c - honest progress (issue 45, item 8) on a real fleet: job
 * fps and ETA from the frames in flight before any chunk commits, the
 * `status` list showing the frames `status JOB` shows, and `vrctl watch`
 * on a terminal (a pty 60 columns wide) through a worker killed mid-chunk:
 * the bar never goes backwards, the death is an event line, every line
 * fits the width; and through a Redis outage, said and its end said.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "term_fit.h"

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

/* A `secs` long clip in 20-frame chunks on `workers` CPU workers that
 * take 300 ms a frame (a test hook): a chunk runs 6 s at least. */
static void slow_job_of(double secs, int workers, double lease_s, char *id, size_t n)
{
    cr_assert_eq(tdist_start(&D, 1, lease_s, 1, 0), 0);
    D.hb_ms = 200;
    setenv("VR_TEST_FRAME_DELAY_MS", "300", 1);
    for (int i = 0; i < workers; i++)
        tdist_worker(&D);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    char in[400], out[400];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, secs, 160, 20, 0), 0);
    const char *two[] = { "--chunk-seconds", "2", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, two, id, n), 0);
}

/* slow_job_of a 4 s clip: two chunks. */
static void slow_job(int workers, double lease_s, char *id, size_t n)
{
    slow_job_of(4, workers, lease_s, id, n);
}

/* `status ID --json` as an object (caller frees), NULL when it failed. */
static json_t *status_json(const char *id)
{
    static char buf[16384];
    const char *args[] = { "status", id, "--json", NULL };
    if (tdist_vrctl(&D, buf, sizeof buf, args) != 0)
        return NULL;
    return json_loads(buf, 0, NULL);
}

static long long jint(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

Test(cli_watch, fps_and_eta_before_the_first_commit, .fini = teardown, .timeout = 120)
{
    char id[64], list[8192];
    slow_job(2, 30, id, sizeof id);
    double fps = 0, eta = -1;
    long long running = 0, listed = 0;
    for (int t = 0; t < 600 && !(fps > 0 && listed > 0); t++, tmsleep(100)) {
        json_t *o = status_json(id);
        if (!o)
            continue;
        int committed = jint(o, "chunks_done") > 0;
        running = jint(o, "frames_running");
        double f = json_real_value(json_object_get(o, "fps"));
        double e = json_real_value(json_object_get(o, "eta_s"));
        json_decref(o);
        cr_assert(!committed, "a chunk committed before any figure showed");
        if (running < 2)
            continue;
        fps = f;
        eta = e;
        /* the list's FRAMES column: JOB STATE DATE TIME CHUNKS FRAMES ... */
        const char *args[] = { "status", NULL };
        if (tdist_vrctl(&D, list, sizeof list, args) != 0)
            continue;
        const char *line = strstr(list, id);
        long long fr = 0, tot = 0;
        if (line && sscanf(line, "%*s %*s %*s %*s %*s %lld/%lld", &fr, &tot) == 2)
            listed = fr;
    }
    cr_assert_gt(fps, 0, "job fps 0 with %lld frames in flight", running);
    cr_assert_geq(eta, 0, "no ETA with %lld frames in flight at %.2f fps", running, fps);
    cr_assert_gt(listed, 0, "the status list shows no frames while status JOB shows %lld:\n%s",
                 running, list);
    cr_assert_eq(tdist_watch(&D, id, 90000), 0);
}

/* ---- watch on a terminal ---- */

struct pty_watch {
    int fd;
    pid_t pid;
    pthread_t th;
    char *out;                  /* all it wrote, NUL-terminated */
    size_t len, cap;
    pthread_mutex_t mu;
};

static void *pty_reader(void *arg)
{
    struct pty_watch *p = arg;
    char buf[4096];
    ssize_t r;
    while ((r = read(p->fd, buf, sizeof buf)) > 0) {
        pthread_mutex_lock(&p->mu);
        if (p->len + (size_t)r + 1 < p->cap) {
            memcpy(p->out + p->len, buf, (size_t)r);
            p->len += (size_t)r;
            p->out[p->len] = '\0';
        }
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* `vrctl watch ID` on a pty `cols` columns wide, read as it runs. */
static void pty_watch_start(struct pty_watch *p, const char *id, int cols)
{
    memset(p, 0, sizeof *p);
    p->cap = 8 << 20;
    p->out = calloc(1, p->cap);
    pthread_mutex_init(&p->mu, NULL);
    struct winsize ws = { .ws_row = 40, .ws_col = (unsigned short)cols };
    char bin[512];
    const char *dir = getenv("VR_BIN_DIR");
    snprintf(bin, sizeof bin, "%s/vrctl", dir && *dir ? dir : "bin");
    p->pid = forkpty(&p->fd, NULL, NULL, &ws);
    cr_assert_geq(p->pid, 0);
    if (p->pid == 0) {
        unsetenv("COLUMNS");
        execl(bin, "vrctl", "watch", id, "--redis", D.r.url, (char *)NULL);
        _exit(127);
    }
    pthread_create(&p->th, NULL, pty_reader, p);
}

static int pty_has(struct pty_watch *p, const char *needle)
{
    pthread_mutex_lock(&p->mu);
    int has = strstr(p->out, needle) != NULL;
    pthread_mutex_unlock(&p->mu);
    return has;
}

static int pty_watch_end(struct pty_watch *p, int timeout_ms)
{
    int st = -1;
    for (int t = 0; t < timeout_ms / 100; t++, tmsleep(100))
        if (waitpid(p->pid, &st, WNOHANG) == p->pid)
            break;
    if (st == -1) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, &st, 0);
    }
    pthread_join(p->th, NULL);
    close(p->fd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The screen's lines as written: escape sequences (CSI) and CRs dropped. */
static char *pty_plain(const char *s)
{
    char *o = malloc(strlen(s) + 1), *w = o;
    for (const char *r = s; *r;) {
        if (r[0] == '\033' && r[1] == '[') {
            r += 2;
            while (*r && !(*r >= '@' && *r <= '~'))
                r++;
            r += *r != '\0';
        } else if (*r == '\r') {
            r++;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return o;
}

Test(cli_watch, a_killed_worker_on_a_narrow_terminal, .fini = teardown, .timeout = 180)
{
    char id[64];
    slow_job(2, 2, id, sizeof id);
    struct pty_watch p;
    pty_watch_start(&p, id, 60);
    /* both workers into their chunk (a few frames each), none committed */
    long long running = 0;
    for (int t = 0; t < 600 && running < 12; t++, tmsleep(100)) {
        json_t *o = status_json(id);
        if (o && jint(o, "chunks_done") == 0)
            running = jint(o, "frames_running");
        json_decref(o);
    }
    cr_assert_geq(running, 12, "the workers did not get going");
    kill(D.w[0], SIGKILL);
    for (int t = 0; t < 300 && !pty_has(&p, "worker-lost"); t++)
        tmsleep(100);
    int rc = pty_watch_end(&p, 120000);
    char *plain = pty_plain(p.out);
    cr_assert_eq(rc, 0, "watch exited %d:\n%s", rc, plain);
    cr_assert(strstr(plain, "worker-lost"), /* its words are past the 60th column */
              "no event line for the killed worker:\n%s", plain);
    /* the bar's percentages, in the order drawn, never fall */
    int last = -1, bars = 0;
    for (const char *s = plain; (s = strstr(s, "% [")) != NULL; s++) {
        const char *b = s;
        while (b > plain && b[-1] != ' ')
            b--;
        int pct;
        if (sscanf(b, "%d%%", &pct) != 1)
            continue;
        cr_assert_geq(pct, last, "the bar went back from %d%% to %d%%:\n%s", last, pct, plain);
        last = pct;
        bars++;
    }
    cr_assert_gt(bars, 5);
    cr_assert_eq(last, 100);
    /* and no line is wider than the terminal (less its last column) */
    for (char *line = strtok(plain, "\n"); line; line = strtok(NULL, "\n"))
        if (!strstr(line, ": done in")) /* the last line, below the block, is a log line */
            cr_assert_leq(term_width(line), 59, "a line of %d columns: '%s'", term_width(line), line);
    free(plain);
    free(p.out);
}

Test(cli_watch, a_redis_outage_is_said, .fini = teardown, .timeout = 180)
{
    char id[64];
    /* one chunk: the job cannot end while Redis is down, whatever the
     * chunk's length, so a second one only made the watch's tail longer */
    slow_job_of(2, 1, 30, id, sizeof id);
    struct pty_watch p;
    pty_watch_start(&p, id, 100);
    for (int t = 0; t < 300 && !pty_has(&p, "frames, "); t++) /* a worker line */
        tmsleep(100);
    tredis_kill(&D.r);
    for (int t = 0; t < 100 && !pty_has(&p, "Redis unreachable for"); t++)
        tmsleep(100);
    cr_assert_eq(tredis_restart(&D.r), 0);
    int rc = pty_watch_end(&p, 120000);
    char *plain = pty_plain(p.out);
    cr_assert_eq(rc, 0, "watch exited %d:\n%s", rc, plain);
    cr_assert(strstr(plain, "Redis unreachable ("), "the outage was not said:\n%s", plain);
    cr_assert(strstr(plain, "Redis answers again after"), "its end was not said:\n%s", plain);
    free(plain);
    free(p.out);
}

/* ---- term_fit ---- */

Test(cli_watch, lines_fit_by_display_width)
{
    char s[256];
    snprintf(s, sizeof s, "chunk 3 \033[31mred\033[0m %s", "漢字漢字漢字漢字漢字漢字");
    term_fit(s, 20);
    cr_assert_null(strchr(s, '\033'), "an escape went through: %s", s);
    cr_assert_leq(term_width(s), 20, "'%s' is %d columns", s, term_width(s));
    cr_assert(strstr(s, "..."), "%s", s);
    snprintf(s, sizeof s, "short");
    term_fit(s, 20);
    cr_assert_str_eq(s, "short");
}
