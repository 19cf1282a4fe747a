/*
 * config.c - table-driven, strict JSON configuration (see config.h).
 */
#include "config.h"

#include "paths.h"
#include "storage.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the key table ---- */

enum key_type { K_INT, K_DOUBLE, K_BOOL, K_STR, K_NAME };

struct config_key {
    const char *name;
    enum key_type type;
    size_t off;
    size_t size;            /* K_STR: buffer size */
    double min, max;        /* K_INT, K_DOUBLE */
    const char *choices;    /* K_STR: "a|b|c", or NULL for free text */
};
/* K_NAME: a K_STR that must be a plain file name (config_name_ok) */

#define KI(n, lo, hi)  { #n, K_INT, offsetof(struct vr_config, n), 0, lo, hi, NULL }
#define KD(n, lo, hi)  { #n, K_DOUBLE, offsetof(struct vr_config, n), 0, lo, hi, NULL }
#define KB(n)          { #n, K_BOOL, offsetof(struct vr_config, n), 0, 0, 1, NULL }
#define KS(n, ch)      { #n, K_STR, offsetof(struct vr_config, n), \
                         sizeof(((struct vr_config *)0)->n), 0, 0, ch }
#define KN(n)          { #n, K_NAME, offsetof(struct vr_config, n), \
                         sizeof(((struct vr_config *)0)->n), 0, 0, NULL }

static const struct config_key config_keys[] = {
    KN(model),
    KN(fuse_model),
    KS(precision, "fp16|fp32"),
    KI(tile_cols, 0, CONFIG_TILE_MAX),
    KI(tile_rows, 0, CONFIG_TILE_MAX),
    KD(tile_overlap, 0.0, 0.75),
    KD(tile_min, 0.25, 4.0),
    KB(tile_stagger),
    KB(tile_fine),
    KI(tile_favor, 0, CONFIG_TILE_FAVOR_MAX),
    KD(tile_favor_floor, 0.0, 1.0),
    KB(whole_pass),
    KI(work_size, 64, 8192),
    KI(tile_gate, 0, 32),
    KI(morph, 0, 16),
    KI(stereo_bands, 0, 32),
    KS(people, "none|pose"),
    KI(people_size, 256, 4096),
    KI(people_grid, 0, 4),
    KD(people_zoom, 0.0, 4.0),
    KD(people_zoom2, 0.0, 4.0),
    KB(people_zoom_split),
    KS(refine, "guided|bilinear"),
    KI(guided_radius, 1, 64),
    KI(guided_band, 0, CONFIG_GUIDED_BAND_MAX),
    KD(guided_eps, 1e-8, 1.0),
    KD(smooth, 0.0, 0.95),
    KI(smooth_frames, 1, 8),
    KI(smooth_still, 0, 255),
    KI(smooth_still_radius, 0, CONFIG_STILL_R_MAX),
    KI(smooth_hold, 0, 255),
    KD(scene_cut, 0.0, 255.0),
    KI(batch, 1, 256),
    KD(output_scale, 0.0625, 1.0),
    KS(encoder, NULL),
    KI(crf, 0, 51),
    KS(preset, NULL),
    KB(matte_intra_p),
    { NULL, 0, 0, 0, 0, 0, NULL }
};

void config_defaults(struct vr_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->profile, sizeof c->profile, "%s", "builtin");
    snprintf(c->model, sizeof c->model, "%s", "selfie_segmentation");
    /* the general model leaves 42% of the bundled sample's people as holes
     * where the landscape one is sure (docs/QUALITY.md) */
    snprintf(c->fuse_model, sizeof c->fuse_model, "%s", "selfie_segmentation_landscape");
    snprintf(c->precision, sizeof c->precision, "%s", "fp16");
    c->tile_cols = 2;
    c->tile_rows = 2;
    c->tile_overlap = 0.25;
    c->tile_min = 1.0;
    c->whole_pass = 1;
    c->work_size = 512;
    snprintf(c->people, sizeof c->people, "%s", "none");
    c->people_size = 1024;
    c->people_grid = 4;
    snprintf(c->refine, sizeof c->refine, "%s", "guided");
    c->guided_radius = 4;
    c->guided_eps = 1e-3;
    c->smooth = 0.0;
    c->smooth_frames = 4;
    c->smooth_still = 6;
    c->scene_cut = 30.0;
    c->batch = 4;
    c->output_scale = 1.0;
    snprintf(c->encoder, sizeof c->encoder, "%s", "auto");
    c->crf = 23;
    snprintf(c->preset, sizeof c->preset, "%s", "ultrafast");
    /* vrh264's Intra 16x16 in P frames: a smooth matte in 1.25x x264's
     * bytes at +1.6 dB, against 4.6x at -0.76 dB without (docs/PERF.md,
     * "eleventh pass") */
    c->matte_intra_p = 1;
}

/* ---- the model by name ---- */

int config_name_ok(const char *s)
{
    if (!*s || *s == '.')
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')
              || *p == '_' || *p == '-' || *p == '.'))
            return 0;
    return 1;
}

int config_model_file(const struct vr_config *c, char *out, size_t n, vr_err *err)
{
    if (c->model_file[0]) {
        snprintf(out, n, "%s", c->model_file);
        return 0;
    }
    if (!config_name_ok(c->model))
        return vr_err_set(err, VR_EINVAL, "the model must be named, not pathed "
                          "(letters, digits, '_', '-', '.')");
    char rel[CONFIG_STR + 32];
    snprintf(rel, sizeof rel, "models/%s.tflite", c->model);
    if (vr_data_path(rel, out, n) != 0)
        return vr_err_set(err, VR_ENOENT, "no model '%s' (%s; set VR_DATA_DIR to the "
                          "directory holding models/)", c->model, rel);
    return 0;
}

/* The temporal filter's history alone (frame_temporal.h). */
static int temporal_history(const struct vr_config *c)
{
    int k = c->smooth > 0.0 && c->smooth_frames > 1 ? c->smooth_frames : 1;
    if (k < 2)
        return 0;
    if (c->smooth_hold <= 0)
        return k - 1;
    /* the hold's last refresh is within CONFIG_HOLD_SPAN frames, its
     * average needs the window before it, and its decision the change
     * sums of the span before that (frame_temporal.h) */
    int a = k - 1 + CONFIG_HOLD_SPAN, b = 2 * CONFIG_HOLD_SPAN + 1;
    return a > b ? a : b;
}

int config_history_frames(const struct vr_config *c)
{
    /* the filter's oldest raw matte has its people from the W-1 frames
     * before it (people_track.h): the two histories add */
    int people = strcmp(c->people, "pose") == 0 ? CONFIG_PEOPLE_WINDOW - 1 : 0;
    return temporal_history(c) + people;
}

/* ---- applying JSON ---- */

static int choice_ok(const char *choices, const char *v)
{
    size_t vl = strlen(v);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (l == vl && strncmp(p, v, l) == 0)
            return 1;
        p += l + (bar ? 1 : 0);
    }
    return 0;
}

static int apply_key(struct vr_config *c, const struct config_key *k,
                     json_t *v, const char *src, vr_err *err)
{
    char *base = (char *)c + k->off;
    switch (k->type) {
    case K_INT: {
        if (!json_is_integer(v))
            return vr_err_set(err, VR_EINVAL, "%s: key '%s' must be an integer", src, k->name);
        json_int_t x = json_integer_value(v);
        if (x < k->min || x > k->max)
            return vr_err_set(err, VR_EINVAL, "%s: key '%s' = %lld is outside [%g, %g]",
                              src, k->name, (long long)x, k->min, k->max);
        *(int *)base = (int)x;
        return 0;
    }
    case K_DOUBLE: {
        if (!json_is_number(v))
            return vr_err_set(err, VR_EINVAL, "%s: key '%s' must be a number", src, k->name);
        double x = json_number_value(v);
        if (!(x >= k->min && x <= k->max))
            return vr_err_set(err, VR_EINVAL, "%s: key '%s' = %g is outside [%g, %g]",
                              src, k->name, x, k->min, k->max);
        *(double *)base = x;
        return 0;
    }
    case K_BOOL:
        if (!json_is_boolean(v))
            return vr_err_set(err, VR_EINVAL, "%s: key '%s' must be true or false", src, k->name);
        *(int *)base = json_is_true(v);
        return 0;
    case K_STR:
    case K_NAME: {
        if (!json_is_string(v))
            return vr_err_set(err, VR_EINVAL, "%s: key '%s' must be a string", src, k->name);
        const char *s = json_string_value(v);
        if (strlen(s) >= k->size || !*s)
            return vr_err_set(err, VR_EINVAL, "%s: key '%s' must be 1..%zu characters",
                              src, k->name, k->size - 1);
        if (k->choices && !choice_ok(k->choices, s))
            return vr_err_set(err, VR_EINVAL, "%s: key '%s' = \"%s\" is not one of %s",
                              src, k->name, s, k->choices);
        /* the value is not echoed: it may be a path the submitter probes */
        if (k->type == K_NAME && !config_name_ok(s))
            return vr_err_set(err, VR_EINVAL, "%s: key '%s' must name a model in the worker's "
                              "models directory (letters, digits, '_', '-', '.'; e.g. "
                              "\"selfie_segmentation\"), not a path", src, k->name);
        memcpy(base, s, strlen(s) + 1);
        return 0;
    }
    }
    return vr_err_set(err, VR_EINVAL, "%s: key '%s': bad type", src, k->name);
}

static int apply_object(struct vr_config *c, json_t *root, const char *src, vr_err *err)
{
    if (!json_is_object(root))
        return vr_err_set(err, VR_EINVAL, "%s: top level must be a JSON object", src);
    /* Apply to a copy, so a bad file leaves *c untouched. */
    struct vr_config tmp = *c;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        const struct config_key *k = config_keys;
        while (k->name && strcmp(k->name, key) != 0)
            k++;
        if (!k->name)
            return vr_err_set(err, VR_EINVAL, "%s: unknown key '%s'", src, key);
        int rc = apply_key(&tmp, k, v, src, err);
        if (rc)
            return rc;
    }
    *c = tmp;
    return 0;
}

int config_apply_text(struct vr_config *c, const char *text, const char *src, vr_err *err)
{
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return vr_err_set(err, VR_EINVAL, "%s:%d:%d: %s", src, je.line, je.column, je.text);
    int rc = apply_object(c, root, src, err);
    json_decref(root);
    return rc;
}

/* A config file's bytes at most: the largest profile is under 1 KB. */
#define CONFIG_FILE_MAX (1 << 20)

int config_apply_file(struct vr_config *c, const char *path, vr_err *err)
{
    /* read whole, then parsed: jansson's json_loadfd reads a byte a call
     * (3-4 ms a profile, twice a job: the intake's check and the start);
     * a FIFO or a device named with -c is refused, not waited on */
    char *text = NULL;
    size_t len = 0;
    int rc = storage_read_file(path, CONFIG_FILE_MAX, &text, &len, err);
    if (rc < 0)
        return rc;
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!root)
        return vr_err_set(err, VR_EINVAL, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    rc = apply_object(c, root, path, err);
    json_decref(root);
    return rc;
}

int config_load_profile(struct vr_config *c, const char *name, vr_err *err)
{
    config_defaults(c);
    if (!*name || strchr(name, '/') || strlen(name) >= sizeof c->profile)
        return vr_err_set(err, VR_EINVAL, "bad profile name '%s'", name);
    char rel[128], path[4096];
    snprintf(rel, sizeof rel, "configs/%s.json", name);
    if (vr_data_path(rel, path, sizeof path) != 0)
        return vr_err_set(err, VR_ENOENT,
                          "unknown profile '%s' (no %s; profiles: fast, balanced, quality, "
                          "quality-people)",
                          name, rel);
    int rc = config_apply_file(c, path, err);
    if (rc == 0)
        snprintf(c->profile, sizeof c->profile, "%s", name);
    return rc;
}

int config_to_json(const struct vr_config *c, char *buf, int size)
{
    json_t *o = json_object();
    for (const struct config_key *k = config_keys; k->name; k++) {
        const char *base = (const char *)c + k->off;
        json_t *v = NULL;
        switch (k->type) {
        case K_INT:    v = json_integer(*(const int *)base); break;
        case K_DOUBLE: v = json_real(*(const double *)base); break;
        case K_BOOL:   v = json_boolean(*(const int *)base); break;
        case K_STR:
        case K_NAME:   v = json_string(base); break;
        }
        json_object_set_new(o, k->name, v);
    }
    char *s = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(o);
    if (!s)
        return -1;
    int n = snprintf(buf, (size_t)size, "%s", s);
    free(s);
    return n < size ? n : -1;
}

char *config_flags_json(int crf, const char *encoder)
{
    if (crf < 0 && !encoder)
        return NULL;
    json_t *o = json_object();
    if (o && crf >= 0)
        json_object_set_new(o, "crf", json_integer(crf));
    if (o && encoder)
        json_object_set_new(o, "encoder", json_string(encoder));
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return s;
}
