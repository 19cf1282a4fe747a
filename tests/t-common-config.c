/*
 * t-common-config.c - profiles and overrides: strict keys, types and ranges, with
 * errors that name the key and the file.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

Test(common_config, profiles_load)
{
    static const char *const names[] = { "fast", "balanced", "quality" };
    for (int i = 0; i < 3; i++) {
        struct vr_config c;
        vr_err e = { 0 };
        cr_assert_eq(config_load_profile(&c, names[i], &e), 0, "%s: %s", names[i], e.msg);
        cr_assert_str_eq(c.profile, names[i]);
        char path[4096];
        cr_assert_eq(config_model_file(&c, path, sizeof path, &e), 0, "%s: %s", names[i], e.msg);
        cr_assert(strstr(path, "models/") && strstr(path, ".tflite"), "%s", path);
    }
}

Test(common_config, quality_tiles_more_than_fast)
{
    struct vr_config f, q;
    cr_assert_eq(config_load_profile(&f, "fast", NULL), 0);
    cr_assert_eq(config_load_profile(&q, "quality", NULL), 0);
    cr_assert_gt(q.tile_cols * q.tile_rows, f.tile_cols * f.tile_rows);
    cr_assert_gt(q.work_size, f.work_size);
}

Test(common_config, unknown_profile_is_error)
{
    struct vr_config c;
    vr_err e = { 0 };
    cr_assert_eq(config_load_profile(&c, "turbo", &e), VR_ENOENT);
    cr_assert(strstr(e.msg, "turbo"), "%s", e.msg);
}

Test(common_config, unknown_key_names_key_and_source)
{
    struct vr_config c;
    config_defaults(&c);
    vr_err e = { 0 };
    cr_assert_eq(config_apply_text(&c, "{\"tile_colz\": 2}", "mine.json", &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "tile_colz") && strstr(e.msg, "mine.json"), "%s", e.msg);
}

Test(common_config, wrong_type_and_range)
{
    struct vr_config c;
    config_defaults(&c);
    vr_err e = { 0 };
    cr_assert_eq(config_apply_text(&c, "{\"work_size\": \"big\"}", "a.json", &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "work_size") && strstr(e.msg, "integer"), "%s", e.msg);
    cr_assert_eq(config_apply_text(&c, "{\"tile_overlap\": 2.5}", "a.json", &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "tile_overlap"), "%s", e.msg);
    cr_assert_eq(config_apply_text(&c, "{\"refine\": \"magic\"}", "a.json", &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "guided|bilinear"), "%s", e.msg);
}

Test(common_config, bad_file_leaves_config_untouched)
{
    struct vr_config c, before;
    config_defaults(&c);
    before = c;
    cr_assert_neq(config_apply_text(&c, "{\"work_size\": 1024, \"nope\": 1}", "x", NULL), 0);
    cr_assert_eq(memcmp(&c, &before, sizeof c), 0);
}

Test(common_config, override_file_changes_only_named_keys)
{
    char path[] = "/tmp/vrseg-cfg-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    const char *text = "{\"work_size\": 768}";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    struct vr_config c;
    cr_assert_eq(config_load_profile(&c, "quality", NULL), 0);
    int cols = c.tile_cols;
    vr_err e = { 0 };
    cr_assert_eq(config_apply_file(&c, path, &e), 0, "%s", e.msg);
    cr_assert_eq(c.work_size, 768);
    cr_assert_eq(c.tile_cols, cols);
    unlink(path);
}

Test(common_config, syntax_error_has_line)
{
    struct vr_config c;
    config_defaults(&c);
    vr_err e = { 0 };
    cr_assert_eq(config_apply_text(&c, "{\n\"batch\": }", "b.json", &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "b.json:2:"), "%s", e.msg);
}

Test(common_config, missing_file_is_enoent)
{
    struct vr_config c;
    config_defaults(&c);
    vr_err e = { 0 };
    cr_assert_eq(config_apply_file(&c, "/nonexistent/x.json", &e), VR_ENOENT, "%s", e.msg);
}

/* Issue 27, finding 12: a grid the engine cannot run is refused when the
 * config is read (at submit), naming the range, not when a chunk runs. */
Test(common_config, tile_grid_beyond_the_engine_is_refused_with_its_range)
{
    struct vr_config c;
    config_defaults(&c);
    vr_err e = { 0 };
    cr_assert_eq(config_apply_text(&c, "{\"tile_cols\": 16}", "a.json", &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "tile_cols") && strstr(e.msg, "[0, 8]"), "%s", e.msg);
    cr_assert_eq(config_apply_text(&c, "{\"tile_rows\": 9}", "a.json", &e), VR_EINVAL);
    cr_assert_eq(config_apply_text(&c, "{\"tile_cols\": 8, \"tile_rows\": 8}", "a.json", &e), 0,
                 "%s", e.msg);
}

/* Issue 39: the people tier is a config key that travels with the job
 * (config_to_json), checked when the config is read. */
Test(common_config, people_option_is_checked_and_travels)
{
    struct vr_config c;
    config_defaults(&c);
    cr_assert_str_eq(c.people, "none");
    vr_err e = { 0 };
    cr_assert_eq(config_apply_text(&c, "{\"people\": \"yolo\"}", "a.json", &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "people") && strstr(e.msg, "none|pose"), "%s", e.msg);
    cr_assert_eq(config_apply_text(&c, "{\"people_grid\": 5}", "a.json", &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "people_grid") && strstr(e.msg, "[0, 4]"), "%s", e.msg);
    cr_assert_eq(config_apply_text(&c, "{\"people_size\": 100}", "a.json", &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "people_size") && strstr(e.msg, "[256, 4096]"), "%s", e.msg);
    cr_assert_eq(config_apply_text(&c, "{\"people_zoom\": 5}", "a.json", &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "people_zoom"), "%s", e.msg);
    cr_assert_eq(config_apply_text(&c, "{\"people_zoom2\": -1}", "a.json", &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "people_zoom2"), "%s", e.msg);
    cr_assert_eq(config_apply_text(&c, "{\"people\": \"pose\", \"people_grid\": 3, "
                                   "\"people_size\": 2048, \"people_zoom\": 2, "
                                   "\"people_zoom2\": 1.7, \"people_zoom_split\": true}",
                                   "a.json", &e),
                 0, "%s", e.msg);
    char buf[8192];
    cr_assert_gt(config_to_json(&c, buf, sizeof buf), 0);
    struct vr_config back;
    config_defaults(&back);
    cr_assert_eq(config_apply_text(&back, buf, "job", &e), 0, "%s", e.msg);
    cr_assert_str_eq(back.people, "pose");
    cr_assert_eq(back.people_grid, 3);
    cr_assert_eq(back.people_size, 2048);
    cr_assert_float_eq(back.people_zoom, 2.0, 1e-9);
    cr_assert_float_eq(back.people_zoom2, 1.7, 1e-9);
    cr_assert_eq(back.people_zoom_split, 1);
}

/* quality-people is quality with the people tier and both zoomed crop
 * layouts on, split between the eyes, nothing else (quality keeps the
 * tier off: its GPU cost). */
Test(common_config, quality_people_is_quality_with_the_tier)
{
    struct vr_config q, p;
    cr_assert_eq(config_load_profile(&q, "quality", NULL), 0);
    cr_assert_eq(config_load_profile(&p, "quality-people", NULL), 0);
    cr_assert_str_eq(q.people, "none");
    cr_assert_str_eq(p.people, "pose");
    cr_assert_float_eq(p.people_zoom, 2.0, 1e-9);
    cr_assert_float_eq(p.people_zoom2, 1.7, 1e-9);
    cr_assert_eq(p.people_zoom_split, 1);
    snprintf(p.people, sizeof p.people, "%s", q.people);
    p.people_zoom = q.people_zoom;
    p.people_zoom2 = q.people_zoom2;
    p.people_zoom_split = q.people_zoom_split;
    snprintf(p.profile, sizeof p.profile, "%s", q.profile);
    char a[8192], b[8192];
    cr_assert_gt(config_to_json(&q, a, sizeof a), 0);
    cr_assert_gt(config_to_json(&p, b, sizeof b), 0);
    cr_assert_str_eq(a, b);
}

/* vrh264's intra-in-P choice changes the matte's bytes, so it is a job
 * option that travels with the job to every worker (not a worker's
 * environment, which the fleet could not keep alike). */
Test(common_config, matte_intra_p_travels_with_the_job)
{
    struct vr_config c;
    config_defaults(&c);
    cr_assert_eq(c.matte_intra_p, 1, "on by default since the eleventh pass");
    vr_err e = { 0 };
    cr_assert_eq(config_apply_text(&c, "{\"matte_intra_p\": 2}", "a.json", &e), VR_EINVAL);
    cr_assert_eq(config_apply_text(&c, "{\"matte_intra_p\": false}", "a.json", &e), 0, "%s", e.msg);
    char buf[8192];
    cr_assert_gt(config_to_json(&c, buf, sizeof buf), 0);
    struct vr_config back;
    config_defaults(&back);
    cr_assert_eq(config_apply_text(&back, buf, "job", &e), 0, "%s", e.msg);
    cr_assert_eq(back.matte_intra_p, 0, "a job that turned it off is coded without it everywhere");
}
