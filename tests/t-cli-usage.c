/*
 * t-cli-usage.c - bad usage of the three binaries (issue 28, item 10):
 * exit 2 as README says, one message that begins with the subcommand, a
 * "did you mean" for a mistyped option or command, and Redis's default
 * address when neither --redis nor VR_REDIS is given.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs `$VR_BIN_DIR/<bin> <args>`, stdout and stderr into out; the status. */
static int usage_sh(char *out, size_t n, const char *bin, const char *args)
{
    const char *d = getenv("VR_BIN_DIR");
    return tsh_out(out, n, "%s/%s %s 2>&1", d ? d : "bin", bin, args);
}

/* Lines in s that contain word. */
static int lines_with(const char *s, const char *word)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, word)); p += strlen(word))
        n++;
    return n;
}

/* A 1 s clip in a fresh temp dir. */
static void usage_clip(char *dir, size_t dn, char *clip, size_t cn)
{
    snprintf(dir, dn, "/tmp/vrtest-usage-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(clip, cn, "%s/in.mp4", dir);
    cr_assert_eq(tclip_make(clip, 1.0, 160, 5, 0), 0, "ffmpeg could not make the clip");
}

/* What README calls bad usage exits 2 and names the command: a profile
 * that does not exist, a -c file that does not, a malformed --redis, an
 * -o that is a directory or whose directory is missing (each exited 1, and
 * began "vrctl:", before). */
Test(cli_usage, bad_arguments_exit_2_naming_the_command, .timeout = 60)
{
    char dir[64], clip[128], args[768], out[4096];
    usage_clip(dir, sizeof dir, clip, sizeof clip);
    const char *sock = "--redis unix:///nonexistent/none.sock";
    static const struct { const char *cmd, *opts, *word; } bad[] = {
        { "submit", "-o %s/o.mkv --profile ultra", "unknown profile 'ultra'" },
        { "run", "-o %s/o.mkv --cpu --profile ultra", "unknown profile 'ultra'" },
        { "submit", "-o %s/o.mkv -c /nonexistent/nope.json", "/nonexistent/nope.json" },
        { "submit", "-o %s/", "is a directory" },
        { "run", "--cpu -o %s", "is a directory" },
        { "submit", "-o %s/none/o.mkv", "its directory does not exist" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char opts[256];
        snprintf(opts, sizeof opts, bad[i].opts, dir);
        snprintf(args, sizeof args, "%s %s %s %s", bad[i].cmd, clip, opts,
                 !strcmp(bad[i].cmd, "submit") ? sock : "");
        cr_assert_eq(usage_sh(out, sizeof out, "vrctl", args), 2, "%s: %s", args, out);
        char head[32];
        snprintf(head, sizeof head, "vrctl %s: ", bad[i].cmd);
        cr_assert(!strncmp(out, head, strlen(head)) && strstr(out, bad[i].word), "%s: %s", args,
                  out);
    }
    cr_assert_eq(usage_sh(out, sizeof out, "vrctl", "status --redis redis//x"), 2, "%s", out);
    cr_assert(!strncmp(out, "vrctl status: ", 14) && strstr(out, "redis//x"), "%s", out);
    cr_assert_eq(usage_sh(out, sizeof out, "vr-worker", "serve --cpu --storage /tmp --redis redis//x"),
                 2, "%s", out);
    cr_assert_eq(usage_sh(out, sizeof out, "vr-controller", "run --storage /tmp --redis redis//x"),
                 2, "%s", out);
    cr_assert(!strncmp(out, "vr-controller run: ", 19), "%s", out);
    tsh("rm -rf '%s'", dir);
}

/* A mistyped option: one error (getopt's own line and ours made two), a
 * did-you-mean, exit 2, in each binary's commands alike. */
Test(cli_usage, unknown_option_once_with_did_you_mean, .timeout = 30)
{
    char out[4096];
    static const struct { const char *bin, *args, *head, *near; } cases[] = {
        { "vrctl", "submit in.mp4 -o o.mkv --profle fast", "vrctl submit: ", "'--profile'" },
        { "vrctl", "run --wrokers 2 in.mp4 -o o.mkv", "vrctl run: ", "'--workers'" },
        { "vrctl", "status --jsn", "vrctl status: ", "'--json'" },
        { "vr-worker", "process --profle fast in.mp4 -o o.mkv", "vr-worker process: ", "'--profile'" },
        { "vr-controller", "run --stroage /tmp", "vr-controller run: ", "'--storage'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(usage_sh(out, sizeof out, cases[i].bin, cases[i].args), 2, "%s", out);
        cr_assert(!strncmp(out, cases[i].head, strlen(cases[i].head)), "%s", out);
        cr_assert(strstr(out, "did you mean") && strstr(out, cases[i].near), "%s", out);
        cr_assert_eq(lines_with(out, "unknown option"), 1, "not one error: %s", out);
        cr_assert(!strstr(out, "unrecognized"), "getopt's own message too: %s", out);
    }
    /* far from every option: no guess */
    cr_assert_eq(usage_sh(out, sizeof out, "vrctl", "status --zzzzzzzz"), 2, "%s", out);
    cr_assert(strstr(out, "unknown option '--zzzzzzzz'") && !strstr(out, "did you mean"), "%s", out);
    /* an option without its value says so */
    cr_assert_eq(usage_sh(out, sizeof out, "vrctl", "submit in.mp4 --profile"), 2, "%s", out);
    cr_assert(strstr(out, "'--profile' needs an argument"), "%s", out);
}

Test(cli_usage, unknown_command_with_did_you_mean, .timeout = 30)
{
    char out[4096];
    cr_assert_eq(usage_sh(out, sizeof out, "vrctl", "runn in.mp4"), 2, "%s", out);
    cr_assert(strstr(out, "unknown command 'runn'; did you mean 'run'?"), "%s", out);
    cr_assert_eq(usage_sh(out, sizeof out, "vr-worker", "proces in.mp4"), 2, "%s", out);
    cr_assert(strstr(out, "did you mean 'process'?"), "%s", out);
    cr_assert_eq(usage_sh(out, sizeof out, "vrctl", "help statsu"), 2, "%s", out);
    cr_assert(strstr(out, "did you mean 'status'?"), "%s", out);
}

/* Neither --redis nor VR_REDIS: Redis's own default address is tried
 * (it was a usage error): status answers, or names the address it tried. */
Test(cli_usage, default_redis_address, .timeout = 60)
{
    char out[4096];
    int rc = tsh_out(out, sizeof out, "env -u VR_REDIS %s/vrctl status 2>&1",
                     getenv("VR_BIN_DIR") ? getenv("VR_BIN_DIR") : "bin");
    /* a Redis may listen there on this box: then status answers */
    cr_assert(rc == 0 || (rc == 1 && strstr(out, "127.0.0.1:6379")), "rc %d: %s", rc, out);
    cr_assert(!strstr(out, "no Redis address"), "%s", out);
}
