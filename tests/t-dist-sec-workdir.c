/*
 * t-dist-sec-workdir.c - `vrctl run`'s work dir cannot be squatted (issue
 * 41, finding 10). Its name was the digest of the job's options and the
 * uid (/tmp/vrctl-run-<digest>-<uid>): anyone could create that directory
 * first and the run failed ("not a private directory of this user"). The
 * name is mkdtemp's now, the digest recorded inside; a directory of
 * another user at the old name, or at any vrctl-run-* name with our digest
 * in it, is passed over, and --resume still finds the run's own.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char W[64]; /* the test's $TMPDIR */

static void setup(void)
{
    snprintf(W, sizeof W, "/tmp/vrtest-wd-XXXXXX");
    cr_assert_not_null(mkdtemp(W));
    setenv("TMPDIR", W, 1);
    unsetenv("XDG_RUNTIME_DIR"); /* the shared base, where squatting is possible */
}

static void teardown(void)
{
    tsh("rm -rf '%s'", W);
}

TestSuite(dist_sec_workdir, .init = setup, .fini = teardown, .timeout = 180);

/* `vrctl run` of a 2 s clip, -y, more options (may be NULL); its status,
 * its log in <W>/run.log. */
static int run(const char *extra)
{
    char in[128], out[128], log[128];
    snprintf(in, sizeof in, "%s/in.mp4", W);
    snprintf(out, sizeof out, "%s/out.mkv", W);
    snprintf(log, sizeof log, "%s/run.log", W);
    if (access(in, F_OK))
        cr_assert_eq(tclip_make(in, 2, 128, 5, 0), 0);
    const char *argv[] = { "vrctl", "run", in, "-o", out, "-y", "--cpu", "--workers", "1",
                           "--profile", "fast", "--chunk-seconds", "1", extra, NULL };
    int rc = tproc_wait(tproc_spawn("vrctl", argv, log), 120000);
    if (rc)
        tsh("tail -30 '%s' >&2", log);
    return rc;
}

/* The work dir the last run announced. */
static void temp_dir(char *out, size_t n)
{
    tsh_out(out, n, "sed -n 's/.*temp dir \\(\\/[^ ]*vrctl-run-[A-Za-z0-9-]*\\).*/\\1/p' "
            "'%s/run.log' | tail -1", W);
    out[strcspn(out, "\n")] = '\0';
    cr_assert(out[0], "no temp dir announced");
}

Test(dist_sec_workdir, a_dir_squatted_at_the_old_name_does_not_break_the_run)
{
    char kept[256], old[256], digest[80] = "";
    cr_assert_eq(run("--keep-temp"), 0);
    temp_dir(kept, sizeof kept);
    /* the name the job's options gave the dir before: vrctl-run-<16 hex of
     * the digest>-<uid>, the digest being what the new dir records inside */
    tsh_out(digest, sizeof digest, "cat '%s/digest' 2>/dev/null", kept);
    if (digest[0])
        snprintf(old, sizeof old, "%s/vrctl-run-%.16s-%u", W, digest, (unsigned)getuid());
    else /* before the fix the kept dir has that very name */
        snprintf(old, sizeof old, "%s", kept);
    cr_assert_eq(tsh("rm -rf '%s'", kept), 0);
    /* another user squats it (root here: a dir of nobody's; else one open
     * to others, which no run may take for its own either) */
    cr_assert_eq(mkdir(old, 0755), 0);
    if (getuid() == 0)
        cr_assert_eq(chown(old, 65534, 65534), 0);
    cr_assert_eq(run(NULL), 0, "a directory at %s made the run fail", old);
    struct stat st;
    cr_assert_eq(lstat(old, &st), 0, "the squatter's %s was removed", old);
    cr_assert_eq(st.st_mode & 0777, 0755, "the squatter's %s was changed", old);

    /* a dir of another user's that records our digest is not taken either */
    if (digest[0] && getuid() == 0) {
        char fake[256];
        snprintf(fake, sizeof fake, "%s/vrctl-run-AAAAAA", W);
        cr_assert_eq(tsh("mkdir -m 700 '%s' && printf '%%s' '%s' > '%s/digest' && "
                         "chown -R 65534 '%s'", fake, digest, fake, fake), 0);
        cr_assert_eq(run(NULL), 0);
        temp_dir(kept, sizeof kept);
        cr_assert_str_neq(kept, fake, "the run worked in another user's directory");
    }
}
