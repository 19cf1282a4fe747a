/*
 * t-dist-warm.c - a warm fleet (issue 43), through the whole system (a real
 * redis-server, vr-controller, CPU vr-workers, libav* decoding real clips):
 * a worker keeps its decoder across a 30 s idle gap and releases it when it
 * stops.
 */
#include "rq.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct tdist D;

static void teardown(void)
{
    unsetenv("VR_TEST_WARM_DELAY_MS");
    tdist_stop(&D, 0);
}

TestSuite(dist_warm, .fini = teardown, .timeout = 150);

/* A 2 s H.264 clip of lavfi source `src` (two 1 s chunks); clips of one
 * size are coded alike (the same parameter sets: one decoder fits both). */
static void clip(const char *name, const char *src, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", D.r.dir, name);
    cr_assert_eq(tsh("ffmpeg -v error -y -f lavfi -i %s -t 2 -c:v libx264 -preset veryfast "
                     "-g 25 -keyint_min 25 -sc_threshold 0 -bf 2 -x264-params no-info=1 "
                     "-pix_fmt yuv420p '%s'", src, path), 0);
}

static void run_job(const char *in, const char *outname)
{
    char out[400], id[64];
    snprintf(out, sizeof out, "%s/%s", D.r.dir, outname);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    int rc = tdist_watch(&D, id, 60000);
    if (rc)
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "job on %s", in);
}

/* How each job's first chunk opened its input, in order: the set-up lines
 * less those of chunks that kept the last chunk's input (same file). */
static void first_inputs(char *got, size_t n)
{
    tsh_out(got, n, "grep -o 'fd/[0-9]*: set-up: input open [0-9]* ms ([^)]*)' '%s' | "
            "grep -v 'kept from the last chunk' | sed 's/.*(//'", D.log);
}

/* SIGTERM: the worker drains and stops; 0 when it exited within 20 s. */
static int stop_worker(pid_t p)
{
    kill(p, SIGTERM);
    int rc = tproc_wait(p, 20000);
    for (int i = 0; i < D.nw; i++)
        if (D.w[i] == p)
            D.w[i] = -1;
    return rc;
}

Test(dist_warm, a_worker_keeps_its_decoder_across_a_30_s_idle_gap)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 0), 0);
    char a[400], b[400];
    clip("a.mkv", "testsrc=size=192x96:rate=25", a, sizeof a);
    clip("b.mkv", "testsrc2=size=192x96:rate=25", b, sizeof b);
    pid_t w = tdist_worker(&D);
    run_job(a, "out-a.mkv");
    /* the worker waits for chunks, idle, for 30 s (it dropped its decoder
     * after 10 s before issue 43) */
    tmsleep(30000);
    run_job(b, "out-b.mkv");
    char got[512];
    first_inputs(got, sizeof got);
    cr_assert_str_eq(got, "new)\nnew, its decoder the last chunk's)\n",
                     "the jobs' first chunks' inputs: %s", got);
    /* and it gives the decoder back when it stops, saying so */
    cr_assert_eq(stop_worker(w), 0);
    cr_assert_eq(tsh("grep -q 'kept decoder released (h264 192x96)' '%s'", D.log), 0,
                 "no release line in the worker's log");
    cr_assert_eq(tsh("grep -q 'inputs opened with a new decoder 1 times, a kept one 3' '%s'",
                     D.log), 0, "the worker's decoder counts");
}
