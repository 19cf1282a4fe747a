/*
 * t-dist-sec-owner.c - a job acts as its submitter, not as the controller
 * (issue 41, finding 3, its second half), against a real redis-server
 * under deploy/redis-users.acl plus alice's user made from
 * deploy/redis-submitter.acl.in, a controller run as root with
 * `--submitter alice:2` and a CPU worker. Alice's roots (INPUT-ROOT/alice,
 * OUTPUT-ROOT/alice) belong to uid 1001, hers:
 *
 * - a 0600 file of uid 1002 in her input root (put or linked there: the
 *   intake's check by name passes) is refused when the job is taken, saying
 *   whose mode forbids it; before, the controller read it as root into a
 *   0644 output;
 * - her own 0600 file makes a 0600 output owned by uid 1001;
 * - a job that may not replace its output (a spec written by hand, no
 *   vrctl) never replaces a file put at the output's name after the job
 *   was taken: the publish is a rename-noreplace; before, only the take
 *   looked, and the stitch replaced the file.
 */
#include "util-acl.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct tdist D;
static struct tacl A;
static struct rq *Q; /* admin */

static void teardown(void)
{
    tacl_down(&D, &Q);
}

TestSuite(dist_sec_owner, .fini = teardown, .timeout = 180);

/* alice's user (vrsub-alice, password pw-sub-alice) loaded; her password
 * file into pw. */
static void alice_user(char *pw, size_t pn)
{
    const char *data = getenv("VR_DATA_DIR");
    char acl[400];
    snprintf(acl, sizeof acl, "%s/alice.acl", D.r.dir);
    cr_assert_eq(tsh("sed 's/NAME/alice/g' '%s/deploy/redis-submitter.acl.in' > '%s'",
                     data ? data : ".", acl), 0);
    cr_assert_eq(tacl_load_file(&D, acl), 1);
    snprintf(pw, pn, "%s/sub-alice.pw", D.r.dir);
    cr_assert_eq(tsh("umask 077; echo 'pw-sub-alice' > '%s'", pw), 0);
}

/* vrctl submit alice/IN -o alice/OUT as alice; the id into id. */
static void alice_submits(const char *pw, const char *in, const char *out, char *id, size_t n)
{
    char url[200], i[400], o[400];
    snprintf(url, sizeof url, "redis://vrsub-alice@127.0.0.1:%d", A.port);
    snprintf(i, sizeof i, "%s/alice/%s", D.r.dir, in);
    snprintf(o, sizeof o, "%s/alice/%s", D.r.dir, out);
    const char *args[] = { "submit", i, "-o", o, "--profile", "fast", NULL };
    cr_assert_eq(tacl_vrctl(url, pw, id, n, args), 0, "%s", id);
    id[strcspn(id, "\n")] = '\0';
}

Test(dist_sec_owner, a_submitter_reads_only_what_her_uid_may_and_her_output_is_hers)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to give files to other uids");
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char pw[400];
    alice_user(pw, sizeof pw);
    Q = tacl_up(&D, &A);
    char a[400], s[400];
    snprintf(a, sizeof a, "%s/alice/a.mp4", D.r.dir);
    snprintf(s, sizeof s, "%s/alice/s.mp4", D.r.dir);
    cr_assert_eq(tsh("mkdir -p '%s/alice'", D.r.dir), 0);
    cr_assert_eq(tclip_make(a, 1, 96, 5, 0), 0);
    cr_assert_eq(tclip_make(s, 1, 96, 5, 0), 0);
    cr_assert_eq(tsh("cd '%s' && chown 1001:1001 alice alice/a.mp4 && chown 1002:1002 "
                     "alice/s.mp4 && chmod 0600 alice/a.mp4 alice/s.mp4", D.r.dir), 0);
    const char *extra[] = { "--submitter", "alice:2", NULL };
    cr_assert_gt(tacl_controller(&D, &A, extra), 0);
    cr_assert_gt(tacl_worker(&D, &A), 0);

    /* another uid's 0600 file in her root: refused at the take */
    char id[64], st[32], why[512];
    alice_submits(pw, "s.mp4", "s.mkv", id, sizeof id);
    tacl_wait_state(Q, &D, id, NULL, 60000, st, sizeof st);
    tacl_job_field(Q, id, "error", why, sizeof why);
    cr_assert_str_eq(st, "failed", "alice read uid 1002's 0600 file (job %s: %s)", id, why);
    cr_assert(strstr(why, "not readable by submitter alice") && strstr(why, "0600"), "%s", why);
    char out[400];
    struct stat so;
    snprintf(out, sizeof out, "%s/alice/s.mkv", D.r.dir);
    cr_assert_neq(stat(out, &so), 0, "an output of uid 1002's file was made");

    /* her own 0600 file: a 0600 output, hers */
    alice_submits(pw, "a.mp4", "a.mkv", id, sizeof id);
    tacl_wait_state(Q, &D, id, NULL, 90000, st, sizeof st);
    tacl_job_field(Q, id, "error", why, sizeof why);
    cr_assert_str_eq(st, "done", "job %s: %s", id, why);
    snprintf(out, sizeof out, "%s/alice/a.mkv", D.r.dir);
    cr_assert_eq(stat(out, &so), 0);
    cr_assert_eq(so.st_mode & 0777, 0600, "output mode %04o", (unsigned)(so.st_mode & 0777));
    cr_assert(so.st_uid == 1001 && so.st_gid == 1001, "output owned by %u:%u",
              (unsigned)so.st_uid, (unsigned)so.st_gid);
}

Test(dist_sec_owner, a_file_put_at_the_output_after_the_take_is_never_replaced)
{
    Q = tacl_up(&D, &A);
    cr_assert_gt(tacl_controller(&D, &A, NULL), 0);
    setenv("VR_TEST_FRAME_DELAY_MS", "100", 1); /* the job runs long enough to act in */
    cr_assert_gt(tacl_worker(&D, &A), 0);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    char in[400], out[400], text[64] = "";
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/late.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 96, 5, 0), 0);

    /* no file at the output when the job is taken: the take lets it by */
    char id[64], st[32] = "", why[512] = "";
    tacl_spec_by_hand(&A, in, out, id, sizeof id);
    tacl_wait_state(Q, &D, id, "running", 60000, st, sizeof st);
    cr_assert_str_eq(st, "running", "job %s", id);
    cr_assert_eq(tsh("printf late > '%s' && chmod 0400 '%s'", out, out), 0);

    tacl_wait_state(Q, &D, id, NULL, 120000, st, sizeof st);
    tacl_job_field(Q, id, "error", why, sizeof why);
    tslurp(out, text, sizeof text);
    cr_assert_str_eq(text, "late", "the file put there was replaced (job %s)", st);
    cr_assert_str_eq(st, "failed");
    cr_assert(strstr(why, "exists") && strstr(why, "may not replace"), "%s", why);
    cr_assert_eq(tsh("ls -a '%s' | grep -c 'late.mkv.*tmp' >/dev/null", D.r.dir), 1,
                 "a temporary file was left beside the output");
}
