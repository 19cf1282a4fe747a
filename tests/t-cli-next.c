/*
 * t-cli-next.c - what users asked for next (issue 45), on a real fleet:
 * --crf/--encoder reaching the chunks as they reach `process`, --json on
 * submit and run, `vrctl watch` with no job, `vrctl submit DIR|GLOB` for
 * a batch (refusing what is no video), and shell completion and man pages
 * that hold every command of the table.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

static const char *bindir(void)
{
    const char *d = getenv("VR_BIN_DIR");
    return d && *d ? d : "bin";
}

static long long fsize(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* `vrctl ARGS --redis URL 2>&1` into out; returns its exit status. */
static int vrctl_sh(char *out, size_t n, const char *args)
{
    return tsh_out(out, n, "%s/vrctl %s --redis %s 2>&1", bindir(), args, D.r.url);
}

/* ---- completion and man pages ---- */

Test(cli_next, completion_and_man_hold_every_command, .timeout = 60)
{
    static char list[4096], bash[65536], zsh[65536], man[65536], page[65536], help[16384];
    const char *a_list[] = { "vrctl", "man", "--list", NULL };
    const char *a_bash[] = { "vrctl", "completion", "bash", NULL };
    const char *a_zsh[] = { "vrctl", "completion", "zsh", NULL };
    const char *a_man[] = { "vrctl", "man", NULL };
    const char *a_help[] = { "vrctl", "--help", NULL };
    cr_assert_eq(tproc_run("vrctl", a_list, list, sizeof list), 0);
    cr_assert_eq(tproc_run("vrctl", a_bash, bash, sizeof bash), 0);
    cr_assert_eq(tproc_run("vrctl", a_zsh, zsh, sizeof zsh), 0);
    cr_assert_eq(tproc_run("vrctl", a_man, man, sizeof man), 0);
    cr_assert_eq(tproc_run("vrctl", a_help, help, sizeof help), 0);
    int n = 0;
    for (char *c = strtok(list, "\n"); c; c = strtok(NULL, "\n"), n++) {
        char want[128];
        cr_assert(strstr(help, c), "'%s' is not in --help", c);
        snprintf(want, sizeof want, "    %s) ", c);
        cr_assert(strstr(bash, want), "bash completion lacks '%s'", c);
        snprintf(want, sizeof want, "'%s:", c);
        cr_assert(strstr(zsh, want), "zsh completion lacks '%s'", c);
        snprintf(want, sizeof want, ".B %s\n", c);
        cr_assert(strstr(man, want), "vrctl(1) lacks '%s'", c);
        const char *a_page[] = { "vrctl", "man", c, NULL };
        cr_assert_eq(tproc_run("vrctl", a_page, page, sizeof page), 0, "vrctl man %s", c);
        cr_assert(strstr(page, ".SH SYNOPSIS"), "vrctl man %s:\n%s", c, page);
    }
    cr_assert_geq(n, 13, "%d commands", n);
    /* the options come from the table too, and the scripts parse */
    cr_assert(strstr(bash, "--crf") && strstr(bash, "--encoder") && strstr(zsh, "--json"));
    cr_assert_eq(tsh("%s/vrctl completion bash | bash -n", bindir()), 0);
}

/* ---- the fleet ---- */

Test(cli_next, crf_encoder_and_json_reach_the_fleet, .fini = teardown, .timeout = 240)
{
    static char buf[16384];
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 1), 0);
    char in[400], plain[400], coarse[400], id[64], args[2048];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(plain, sizeof plain, "%s/plain.mkv", D.r.dir);
    snprintf(coarse, sizeof coarse, "%s/coarse.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 160, 10, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, plain, NULL, id, sizeof id), 0);
    cr_assert_eq(tdist_watch(&D, id, 120000), 0);
    /* an unknown encoder is refused before anything is queued */
    snprintf(args, sizeof args, "submit %s -o %s --encoder nosuch", in, coarse);
    cr_assert_eq(vrctl_sh(buf, sizeof buf, args), 2, "%s", buf);
    cr_assert(strstr(buf, "--encoder nosuch: no such encoder"), "%s", buf);
    /* --crf 51 --json --wait: one JSON object on stdout, the job done */
    snprintf(args, sizeof args, "%s/vrctl submit %s -o %s --profile fast --crf 51 "
             "--encoder libx264 --json --wait --redis %s 2>/dev/null", bindir(), in, coarse,
             D.r.url);
    cr_assert_eq(tsh_out(buf, sizeof buf, "%s", args), 0, "%s", buf);
    json_error_t je;
    json_t *o = json_loads(buf, 0, &je);
    cr_assert_not_null(o, "not JSON (%s): %s", je.text, buf);
    cr_assert_str_eq(json_string_value(json_object_get(o, "state")), "done", "%s", buf);
    cr_assert_str_eq(json_string_value(json_object_get(o, "output")), coarse, "%s", buf);
    cr_assert_eq(json_integer_value(json_object_get(o, "exit")), 0);
    cr_assert_gt(json_integer_value(json_object_get(o, "frames")), 0);
    json_decref(o);
    /* the chunks were coded at crf 51: the matte is smaller than at the
     * profile's 26 */
    cr_assert_lt(fsize(coarse), fsize(plain), "crf 51: %lld bytes, profile: %lld",
                 fsize(coarse), fsize(plain));
    /* and process takes the same flags */
    char p1[400], p2[400];
    snprintf(p1, sizeof p1, "%s/p1.mkv", D.r.dir);
    snprintf(p2, sizeof p2, "%s/p2.mkv", D.r.dir);
    cr_assert_eq(tsh("%s/vr-worker process --cpu --profile fast %s -o %s >/dev/null 2>&1",
                     bindir(), in, p1), 0);
    cr_assert_eq(tsh("%s/vr-worker process --cpu --profile fast --crf 51 --encoder libx264 "
                     "%s -o %s >/dev/null 2>&1", bindir(), in, p2), 0);
    cr_assert_lt(fsize(p2), fsize(p1));
    /* the project's own matte encoder is taken by name too, by both, and
     * codes the matte (it is not one of FFmpeg's) */
    char p3[400], v1[400];
    snprintf(p3, sizeof p3, "%s/p3.mkv", D.r.dir);
    snprintf(v1, sizeof v1, "%s/v1.mkv", D.r.dir);
    cr_assert_eq(tsh_out(buf, sizeof buf, "%s/vr-worker process --cpu --profile fast --encoder "
                         "vrh264 %s -o %s 2>&1", bindir(), in, p3), 0, "%s", buf);
    cr_assert(strstr(buf, "encoder vrh264"), "%s", buf);
    snprintf(args, sizeof args, "%s/vrctl submit %s -o %s --profile fast --encoder vrh264 "
             "--json --wait --redis %s 2>/dev/null", bindir(), in, v1, D.r.url);
    cr_assert_eq(tsh_out(buf, sizeof buf, "%s", args), 0, "%s", buf);
    cr_assert(strstr(buf, "\"done\""), "%s", buf);
    cr_assert_eq(tsh("grep -q 'encoder vrh264' '%s'", D.log), 0, "no worker coded with vrh264");
}

Test(cli_next, run_json, .timeout = 240)
{
    static char buf[16384];
    char dir[] = "/tmp/vr-runjson-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char in[400], out[400];
    snprintf(in, sizeof in, "%s/in.mp4", dir);
    snprintf(out, sizeof out, "%s/out.mkv", dir);
    cr_assert_eq(tclip_make(in, 2, 160, 10, 0), 0);
    int rc = tsh_out(buf, sizeof buf, "%s/vrctl run %s -o %s --cpu --profile fast --json "
                     "2>/dev/null", bindir(), in, out);
    json_t *o = json_loads(buf, 0, NULL);
    cr_assert_eq(rc, 0, "%s", buf);
    cr_assert_not_null(o, "not JSON: %s", buf);
    cr_assert_str_eq(json_string_value(json_object_get(o, "state")), "done", "%s", buf);
    cr_assert_str_eq(json_string_value(json_object_get(o, "output")), out, "%s", buf);
    cr_assert(json_string_value(json_object_get(o, "id")));
    cr_assert_eq(json_integer_value(json_object_get(o, "exit")), 0);
    json_decref(o);
    tsh("rm -rf %s", dir);
}

Test(cli_next, batch_submit_and_watch_all, .fini = teardown, .timeout = 240)
{
    static char buf[16384];
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 2), 0);
    char src[400], outd[400], args[2048];
    snprintf(src, sizeof src, "%s/videos", D.r.dir);
    snprintf(outd, sizeof outd, "%s/out", D.r.dir);
    cr_assert_eq(tsh("mkdir -p %s %s %s/empty", src, outd, D.r.dir), 0);
    char a[500], b[500];
    snprintf(a, sizeof a, "%s/a.mp4", src);
    snprintf(b, sizeof b, "%s/b.mov", src);
    cr_assert_eq(tclip_make(a, 2, 160, 10, 0), 0);
    cr_assert_eq(tclip_make(b, 2, 160, 10, 0), 0);
    cr_assert_eq(tsh("echo notes > %s/notes.txt && ffmpeg -loglevel error -i %s -frames:v 1 "
                     "%s/still.png", src, a, src), 0);
    /* nothing to watch yet: said, exit 0 */
    cr_assert_eq(vrctl_sh(buf, sizeof buf, "watch"), 0, "%s", buf);
    cr_assert(strstr(buf, "no live jobs"), "%s", buf);
    /* the directory: two jobs, the text file and the still image refused */
    snprintf(args, sizeof args, "submit %s -o %s --profile fast --chunk-seconds 1", src, outd);
    cr_assert_eq(vrctl_sh(buf, sizeof buf, args), 0, "%s", buf);
    cr_assert(strstr(buf, "notes.txt: not a video"), "%s", buf);
    cr_assert(strstr(buf, "still.png: a still image"), "%s", buf);
    cr_assert(strstr(buf, "2 jobs queued, 2 files refused"), "%s", buf);
    cr_assert(strstr(buf, "-> ") && strstr(buf, "/out/a.mask.mkv") && strstr(buf, "/out/b.mask.mkv"),
              "%s", buf);
    /* watch with no job follows both to their end */
    cr_assert_eq(vrctl_sh(buf, sizeof buf, "watch"), 0, "%s", buf);
    cr_assert(strstr(buf, "done in"), "%s", buf);
    char oa[600], ob[600];
    snprintf(oa, sizeof oa, "%s/a.mask.mkv", outd);
    snprintf(ob, sizeof ob, "%s/b.mask.mkv", outd);
    cr_assert_gt(fsize(oa), 0);
    cr_assert_gt(fsize(ob), 0);
    /* a quoted pattern: its one match (the outputs exist: -y replaces them) */
    snprintf(args, sizeof args, "submit '%s/*.mp4' -o %s --profile fast -y --json", src, outd);
    cr_assert_eq(tsh_out(buf, sizeof buf, "%s/vrctl %s --redis %s 2>/dev/null", bindir(), args,
                         D.r.url), 0, "%s", buf);
    json_t *arr = json_loads(buf, 0, NULL);
    cr_assert(json_is_array(arr) && json_array_size(arr) == 1, "%s", buf);
    json_decref(arr);
    cr_assert_eq(vrctl_sh(buf, sizeof buf, "watch"), 0, "%s", buf);
    /* nothing that is a video: exit 2, and why */
    snprintf(args, sizeof args, "submit %s/notes.txt %s/still.png -o %s", src, src, outd);
    cr_assert_eq(vrctl_sh(buf, sizeof buf, args), 2, "%s", buf);
    cr_assert(strstr(buf, "0 jobs queued, 2 files refused"), "%s", buf);
}
