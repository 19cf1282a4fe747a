/*
 * c-elastic.c - work stealing (issue 44) under churn: a job whose chunk
 * length is left to the controller (elastic, never --chunk-seconds) starts
 * on one worker; every 2 s a worker comes (up to 4) or, once 4 run and a
 * chunk was committed since the last kill, one is killed -9 and another
 * takes its place. Running chunks are cut for the
 * newcomers while their workers die, mid-cut or not; the job ends as one
 * clean run, each chunk committed once, no frame twice or missing.
 */
#include "chaos.h"

#include <criterion/criterion.h>
#include <string.h>

TestSuite(chaos_elastic, .fini = chaos_teardown, .timeout = 600);

Test(chaos_elastic, workers_come_and_go_every_2_s_through_sixty_pieces)
{
    chaos_up(0, 3, 1, 200, 100);
    const char *in = chaos_clip("in.mp4", 60, 160); /* 60 pieces of 1 s */
    char id[64], out[400], ref[400], buf[256] = "";
    chaos_ref(in, "ref.mkv", ref);
    snprintf(out, sizeof out, "%s/out.mkv", CH.d.r.dir);
    const char *args[] = { "submit", in, "-o", out, "--profile", "fast", "-c", CH.cfg, NULL };
    cr_assert_eq(chaos_vrctl(buf, sizeof buf, args), 0, "%s", buf);
    buf[strcspn(buf, "\n")] = '\0';
    snprintf(id, sizeof id, "%s", buf);
    chaos_wait_job(id, "state", "running", 60000);
    char jk[128], state[32] = "";
    rq_key_job(jk, sizeof jk, id);
    int came = 0, went = 0;
    long long done_at_kill = 0;
    for (int t = 0; t < 240; t++) { /* at most 8 minutes */
        chaos_msleep(2000);
        chaos_hget(jk, "state", state, sizeof state);
        if (strcmp(state, "running"))
            break;
        /* a kill waits for a chunk committed since the last one (as
         * chaos_worker's kill loop): a loaded box, whose workers start and
         * run far slower, gets no more deaths per chunk than a fast one */
        long long done = chaos_job_ll(id, "chunks_done");
        if (CH.d.nw < 4) {
            chaos_worker(200, 0);
            came++;
        } else if (done > done_at_kill) {
            chaos_worker_replace(went++ % 4, 200);
            came++;
            done_at_kill = done;
        }
    }
    long long cuts = chaos_job_ll(id, "cuts");
    cr_log_info("elastic churn: %d workers came, %d killed, %lld cuts", came, went, cuts);
    chaos_watch(id, 0, 240000);
    chaos_check_done(id, in, out, ref);
    chaos_check_no_temps(out, 30000);
    cr_assert_geq(cuts, 1, "no chunk was cut: the churn tested no cut");
    cr_assert_geq(went, 1, "no worker went: the job ended before the fleet was full");
}
