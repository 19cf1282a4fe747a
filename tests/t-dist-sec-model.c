/*
 * t-dist-sec-model.c - a job names its model, it never paths it (issue 27,
 * finding 1): `{"model": "/etc/shadow"}` given to `vrctl submit -c`, or put
 * straight into Redis as a job's config, is refused with a message that
 * says how a model is named and holds nothing of the file (no "TensorFlow
 * Lite", no file identifier bytes, not even the path). A name resolves in
 * the worker's own models/ only; the local user's `segment-image --model
 * PATH` still takes a path.
 */
#include "config.h"
#include "job.h"
#include "rq.h"
#include "rq_jobs.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tdist D;
static struct rq *Q;

static void teardown(void)
{
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_sec_model, .fini = teardown, .timeout = 150);

/* Nothing in `text` comes from opening the file the attacker named. */
static void leaks_nothing(const char *text)
{
    cr_assert(!strstr(text, "TensorFlow") && !strstr(text, "identifier")
              && !strstr(text, "/etc/shadow") && !strstr(text, "cannot open"), "%s", text);
}

Test(dist_sec_model, config_takes_a_name_never_a_path)
{
    static const char *const bad[] = { "/etc/shadow", "../../etc/shadow", "models/x.tflite",
                                       ".hidden", "a\\\\b", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct vr_config c;
        config_defaults(&c);
        char json[128];
        snprintf(json, sizeof json, "{\"model\": \"%s\"}", bad[i]);
        vr_err e = { 0 };
        cr_assert_eq(config_apply_text(&c, json, "mine.json", &e), VR_EINVAL, "%s", json);
        cr_assert(strstr(e.msg, "mine.json") && strstr(e.msg, "'model'"), "%s", e.msg);
        leaks_nothing(e.msg);
    }
    struct vr_config c;
    config_defaults(&c);
    vr_err e = { 0 };
    cr_assert_eq(config_apply_text(&c, "{\"model\": \"selfie_segmentation_landscape\"}", "a",
                                   &e), 0, "%s", e.msg);
    char path[4096];
    cr_assert_eq(config_model_file(&c, path, sizeof path, &e), 0, "%s", e.msg);
    cr_assert(strstr(path, "models/selfie_segmentation_landscape.tflite"), "%s", path);
    /* a name with no model is an error naming the name, and nothing else */
    snprintf(c.model, sizeof c.model, "shadow");
    cr_assert_eq(config_model_file(&c, path, sizeof path, &e), VR_ENOENT);
    cr_assert(strstr(e.msg, "no model 'shadow'"), "%s", e.msg);
    /* set by code, a path is refused too (the struct is not only filled by JSON) */
    snprintf(c.model, sizeof c.model, "/etc/shadow");
    cr_assert_eq(config_model_file(&c, path, sizeof path, &e), VR_EINVAL);
    leaks_nothing(e.msg);
}

Test(dist_sec_model, submit_c_with_a_model_path_is_refused)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 0, 0), 0);
    char in[400], out[400], cfg[400], log[400], text[8192];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(cfg, sizeof cfg, "%s/evil.json", D.r.dir);
    snprintf(log, sizeof log, "%s/submit.log", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 96, 5, 0), 0);
    cr_assert_eq(tsh("echo '{\"model\": \"/etc/shadow\"}' > '%s'", cfg), 0);
    const char *argv[] = { "vrctl", "submit", in, "-o", out, "-c", cfg, "--redis", D.r.url,
                           NULL };
    int rc = tproc_wait(tproc_spawn("vrctl", argv, log), 30000);
    tslurp(log, text, sizeof text);
    cr_assert_neq(rc, 0, "submit took a model path (exit %d): %s", rc, text);
    cr_assert(strstr(text, "'model'") && strstr(text, "not a path"), "%s", text);
    leaks_nothing(text);
}

Test(dist_sec_model, a_model_path_put_into_redis_fails_the_job_and_leaks_nothing)
{
    /* a controller and a worker: whichever reads the config first refuses it */
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 1), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    struct job_spec js;
    job_spec_defaults(&js);
    snprintf(js.input, sizeof js.input, "%s/in.mp4", D.storage);
    snprintf(js.output, sizeof js.output, "%s/out.mkv", D.storage);
    snprintf(js.profile, sizeof js.profile, "fast");
    snprintf(js.config, sizeof js.config, "{\"model\": \"/etc/shadow\"}");
    cr_assert_eq(tclip_make(js.input, 1, 96, 5, 0), 0);
    js.chunk_seconds = 1;
    job_new_id(js.id, sizeof js.id);
    js.created_ms = rq_now_ms();
    char *spec = NULL;
    cr_assert_eq(job_spec_to_json(&js, &spec, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_job_submit(Q, js.id, spec, js.created_ms, 10, 0, &e), 0, "%s", e.msg);
    free(spec);

    char key[128], state[32] = "", why[1024] = "";
    rq_key_job(key, sizeof key, js.id);
    for (int t = 0; t < 60000 && strcmp(state, "failed"); t += 50) {
        rq_hget(Q, key, "state", state, sizeof state, NULL);
        tmsleep(50);
    }
    cr_assert_str_eq(state, "failed");
    rq_hget(Q, key, "error", why, sizeof why, NULL);
    cr_assert(strstr(why, "'model'") && strstr(why, "not a path"), "%s", why);
    leaks_nothing(why);
}

Test(dist_sec_model, segment_image_model_option_takes_the_users_own_file)
{
    cr_assert_eq(tredis_start(&D.r, 0), 0);
    char png[400], mask[400], model[4096];
    snprintf(png, sizeof png, "%s/in.png", D.r.dir);
    snprintf(mask, sizeof mask, "%s/mask.png", D.r.dir);
    struct vr_config c;
    config_defaults(&c);
    cr_assert_eq(config_model_file(&c, model, sizeof model, NULL), 0);
    cr_assert_eq(tsh("ffmpeg -v error -f lavfi -i testsrc=s=256x256 -frames:v 1 -y '%s'", png),
                 0);
    cr_assert_eq(tsh("cp '%s' '%s/mine.tflite'", model, D.r.dir), 0);
    char mine[500];
    snprintf(mine, sizeof mine, "%s/mine.tflite", D.r.dir);
    const char *argv[] = { "vr-worker", "segment-image", "--raw", "--model", mine, png,
                           mask, NULL };
    cr_assert_eq(tproc_run("vr-worker", argv, NULL, 0), 0);
}
