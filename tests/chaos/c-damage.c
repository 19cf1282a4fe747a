/*
 * c-damage.c - chaos: a chunk's output damaged on the storage between its
 * commit and the stitch (issue 26, finding 7). 64 bytes flipped in the
 * middle, or the file cut to half its size: the stitch finds it does not
 * match the checksum its commit recorded, and the chunk is computed again
 * instead of stitched (a flip was stitched into a wrong output; a cut
 * failed the job as if the user's source were corrupt).
 */
#include "chaos.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(chaos_damage, .fini = chaos_teardown, .timeout = 240);

/* A 3-chunk job whose chunks 1 and 2 are committed while chunk 0 is held
 * by a stopped worker (so the stitch cannot have read chunk 1 yet); then
 * chunk 1's output is damaged (truncate 0: 64 bytes flipped in its
 * middle; 1: cut to half its size; 2: its timestamp sidecar deleted) and
 * the stopped worker resumes. The
 * job must end done, identical, each chunk committed once. */
static void damaged_chunk_output(int how)
{
    chaos_up(0, 60, 0, 0, 100); /* leases far longer than the stop */
    pid_t first = chaos_worker(0, 0);
    const char *in = chaos_clip("in.mp4", 3, 160);
    char id[64], out[400], ref[400], o1[600];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_wait_chunk(id, 0, "state", "running", 60000);
    kill(first, SIGSTOP);
    chaos_worker(0, 0);
    chaos_wait_chunk(id, 1, "state", "done", 60000);
    chaos_wait_chunk(id, 2, "state", "done", 60000);
    snprintf(o1, sizeof o1, "%s/jobs/%s/out/00001.mkv", CH.d.storage, id);
    struct stat st;
    cr_assert_eq(stat(o1, &st), 0, "%s", o1);
    long long half = (long long)st.st_size / 2;
    if (how == 2)
        cr_assert_eq(tsh("rm '%s.ts'", o1), 0);
    else if (how)
        cr_assert_eq(tsh("truncate -s %lld '%s'", half, o1), 0);
    else
        cr_assert_eq(tsh("head -c 64 /dev/urandom | dd of='%s' bs=1 seek=%lld conv=notrunc "
                         "2>/dev/null", o1, half), 0);
    kill(first, SIGCONT);
    chaos_watch(id, 0, 120000);
    chaos_check_done(id, in, out, ref);
    chaos_check_no_temps(out, 30000);
    cr_assert_geq(chaos_chunk_ll(id, 1, "attempts"), 2, "chunk 1 was not computed again");
    if (how == 2) { /* named as the sidecar, not as the output that is there */
        cr_assert(chaos_log_has("00001.mkv.ts is missing; requeued", 0),
                  "the deleted sidecar was not named");
        return;
    }
    const char *ev = chaos_events(id);
    cr_assert(strstr(ev, "its output does not match its checksum"), "%s", ev);
}

Test(chaos_damage, sixty_four_flipped_bytes_in_a_chunk_output)
{
    damaged_chunk_output(0);
}

Test(chaos_damage, a_truncated_chunk_output_is_rebuilt)
{
    damaged_chunk_output(1);
}

Test(chaos_damage, a_deleted_sidecar_is_named_and_rebuilt)
{
    damaged_chunk_output(2);
}
