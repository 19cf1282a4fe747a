/*
 * t-cli-progress.c - progress moves within a chunk: a worker reports the
 * frames it has encoded of the chunk in hand at each heartbeat, and `vrctl
 * status --json` shows them (frames_running) before the chunk commits.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

Test(cli_progress, frames_move_within_a_chunk, .fini = teardown, .timeout = 120)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 0), 0);
    D.hb_ms = 200;
    /* one chunk of 20 frames, 300 ms a frame: at least 6 s in one chunk */
    setenv("VR_TEST_FRAME_DELAY_MS", "300", 1);
    tdist_worker(&D);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    char in[400], out[400], id[64], buf[8192];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 160, 20, 0), 0);
    const char *one[] = { "--chunk-seconds", "2", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, one, id, sizeof id), 0);
    long long running = 0, done = 0, best = 0;
    for (int t = 0; t < 600 && !(best >= 2 && done == 0); t++, tmsleep(100)) {
        const char *args[] = { "status", id, "--json", NULL };
        if (tdist_vrctl(&D, buf, sizeof buf, args) != 0)
            continue;
        json_t *j = json_loads(buf, 0, NULL);
        json_t *o = json_is_array(j) ? json_array_get(j, 0) : j;
        running = json_integer_value(json_object_get(o, "frames_running"));
        done = json_integer_value(json_object_get(o, "chunks_done"));
        if (done == 0 && running > best)
            best = running;
        json_decref(j);
        if (done > 0)
            break;
    }
    cr_assert_geq(best, 2, "no frames shown before the chunk committed (last: %s)", buf);
    cr_assert_eq(tdist_watch(&D, id, 60000), 0);
}
