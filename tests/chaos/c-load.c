/*
 * c-load.c - chaos: load and user actions. Twenty jobs at once; a job of
 * 1000 chunks stitched by a controller limited to 256 open files (av1an's
 * users hit the open-file limit at stitch beyond ~1000 chunks); cancel
 * mid-job, then retry; a cancel mid-job leaves no stitch-ahead temp.
 */
#include "chaos.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

TestSuite(chaos_load, .fini = chaos_teardown, .timeout = 600);

Test(chaos_load, twenty_jobs_at_once)
{
    chaos_up(0, 10, 3, 0, 200);
    const char *in = chaos_clip("in.mp4", 2, 160);
    char ids[20][64], outs[20][400], ref[400];
    chaos_ref(in, "ref.mkv", ref);
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "out%02d.mkv", i);
        chaos_submit(in, name, NULL, ids[i], outs[i]);
    }
    for (int i = 0; i < 20; i++)
        chaos_watch(ids[i], 0, 300000);
    for (int i = 0; i < 20; i++)
        chaos_check_done(ids[i], in, outs[i], ref);
    /* no fault here: a heartbeat that renews just after the commit acked
     * the entry is no lost lease (issue 26, finding 9) */
    int lost = chaos_log_has("lease lost (reclaimed", 0);
    if (lost)
        tsh("grep -B3 -A3 'lease lost (reclaimed' '%s' >&2", CH.d.log);
    cr_assert(!lost, "a worker logged a lost lease in a run without faults (above)");
}

Test(chaos_load, a_thousand_chunks_under_256_open_files)
{
    /* 200 s at 10 fps, a keyframe every 2 frames, 0.2 s chunks: 1000
     * chunks of 2 frames, 32x24 so that the work is the chunks' overhead. */
    struct rlimit lim = { 256, 256 };
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &lim), 0);
    chaos_up(0, 30, 3, 0, 300);
    char in[400], id[64], out[400], ref[400];
    snprintf(in, sizeof in, "%s/in.mp4", CH.d.r.dir);
    cr_assert_eq(tsh("ffmpeg -v error -y -f lavfi -i testsrc=size=32x24:rate=10 -t 200 "
                     "-c:v libx264 -preset ultrafast -g 2 -keyint_min 2 -sc_threshold 0 "
                     "-pix_fmt yuv420p '%s'", in), 0);
    chaos_ref(in, "ref.mkv", ref);
    const char *short_chunks[] = { "--chunk-seconds", "0.2", NULL };
    chaos_submit(in, "out.mkv", short_chunks, id, out);
    chaos_watch(id, 0, 580000);
    cr_assert_geq(chaos_job_ll(id, "chunks_total"), 1000);
    chaos_check_done(id, in, out, ref);
}

Test(chaos_load, cancel_then_retry)
{
    chaos_up(0, 10, 1, 50, 100);
    const char *in = chaos_clip("in.mp4", 4, 160);
    char id[64], out[400], ref[400], buf[600];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_wait_job_min(id, "chunks_done", 1, 60000);
    const char *cargs[] = { "cancel", id, NULL };
    cr_assert_eq(chaos_vrctl(buf, sizeof buf, cargs), 0, "%s", buf);
    chaos_watch(id, 1, 60000);
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    chaos_hget(jk, "state", buf, sizeof buf);
    cr_assert_str_eq(buf, "cancelled");
    chaos_hget(jk, "error", buf, sizeof buf);
    cr_assert_str_eq(buf, "cancelled by the user");
    /* nothing runs in a cancelled job, whatever its chunk records say, and
     * it has no ETA (issue 26, finding 9) */
    static char st[16384];
    const char *sargs[] = { "status", id, NULL }, *jargs[] = { "status", id, "--json", NULL };
    cr_assert_eq(chaos_vrctl(st, sizeof st, sargs), 0, "%s", st);
    cr_assert(strstr(st, "chunks unfinished") && !strstr(st, "chunks running"), "%s", st);
    cr_assert_eq(chaos_vrctl(st, sizeof st, jargs), 0, "%s", st);
    cr_assert(strstr(st, "\"chunks_running\": 0") && strstr(st, "\"eta_s\": -1"), "%s", st);
    const char *rargs[] = { "retry", id, NULL };
    cr_assert_eq(chaos_vrctl(buf, sizeof buf, rargs), 0, "%s", buf);
    chaos_watch(id, 0, 120000);
    chaos_check_done(id, in, out, ref);
    const char *ev = chaos_events(id);
    cr_assert(strstr(ev, "cancelled") && strstr(ev, "retry"), "%s", ev);
}

Test(chaos_load, cancel_drops_the_stitch_ahead)
{
    /* Issue 26, finding 5: a cancelled (or failed) job left the active set
     * with its stitcher open, so its temporary output stayed in the user's
     * directory (and its slot and descriptors taken) until a restart. */
    chaos_up(0, 10, 1, 100, 100);
    const char *in = chaos_clip("in.mp4", 5, 160);
    char id[64], out[400], ref[400], buf[600];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    int ahead = 0;
    for (int t = 0; t < 60000 && !ahead; t += 20) {
        ahead = tsh("ls -a '%s' | grep -q '^\\.out\\.mkv\\.tmp-'", CH.d.r.dir) == 0;
        if (!ahead)
            chaos_msleep(20);
    }
    cr_assert(ahead, "the stitch ahead never began: the test proves nothing");
    cr_assert_lt(chaos_job_ll(id, "chunks_done"), 5, "the job had ended");
    const char *cargs[] = { "cancel", id, NULL };
    cr_assert_eq(chaos_vrctl(buf, sizeof buf, cargs), 0, "%s", buf);
    chaos_watch(id, 1, 60000);
    chaos_check_no_temps(out, 5000);
    const char *rargs[] = { "retry", id, NULL };
    cr_assert_eq(chaos_vrctl(buf, sizeof buf, rargs), 0, "%s", buf);
    chaos_watch(id, 0, 120000);
    chaos_check_done(id, in, out, ref);
    chaos_check_no_temps(out, 5000);
}
