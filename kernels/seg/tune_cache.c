/*
 * tune_cache.c - the auto-tuner's cache (tune.h): the key string and the JSON
 * file of chosen variants. Plain C (jansson), built with or without CUDA;
 * the timing half is tune.cu.
 *
 * The file is small and written rarely (once per GPU kind, model, geometry
 * and profile), so every store rereads it, changes one entry and replaces it
 * atomically (storage_write_atomic): concurrent workers may lose each
 * other's entry (both re-tune later), never corrupt the file.
 */
#include "tune.h"

#include "storage.h"

#include <jansson.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- key ---- */

void tune_key_string(const struct tune_key *k, char *buf, size_t n)
{
    char name[sizeof k->gpu_name];
    snprintf(name, sizeof name, "%s", k->gpu_name);
    for (char *p = name; *p; p++)
        if (*p == ' ' || *p == '|' || *p == '"' || *p == '\\')
            *p = '_';
    snprintf(buf, n, "%s|sm%d|%s|%dx%d|%s|%s", name, k->sm_count, k->model_hash, k->in_w,
             k->in_h, seg_layout_name(k->layout), k->profile);
}

/* ---- path ---- */

int tune_cache_path(char *buf, size_t n, vr_err *err)
{
    const char *env = getenv("VR_TUNE_CACHE");
    if (env && *env) {
        if (strlen(env) >= n)
            return vr_err_set(err, VR_EINVAL, "VR_TUNE_CACHE is longer than %zu bytes", n - 1);
        snprintf(buf, n, "%s", env);
        return 0;
    }
    const char *home = getenv("HOME");
    if (!home || !*home)
        return vr_err_set(err, VR_ENOENT, "tune cache: neither VR_TUNE_CACHE nor HOME is set");
    if ((size_t)snprintf(buf, n, "%s/.cache/vrseg/tune.json", home) >= n)
        return vr_err_set(err, VR_EINVAL, "tune cache: HOME is too long");
    return 0;
}

/* ---- load ---- */

/* Reads the whole cache file, or NULL (absent, too big, not a regular
 * file, not a cache). */
static json_t *read_cache(const char *path, vr_err *err, int *rc)
{
    char *text = NULL;
    size_t len = 0;
    *rc = storage_read_file(path, TUNE_CACHE_MAX, &text, &len, err);
    if (*rc == VR_ENOENT)
        *rc = vr_err_set(err, VR_ENOENT, "%s: no tune cache yet", path);
    if (*rc < 0)
        return NULL;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!root) {
        *rc = vr_err_set(err, VR_EFORMAT, "%s:%d: %s", path, je.line, je.text);
        return NULL;
    }
    json_t *ver = json_object_get(root, "version"), *ent = json_object_get(root, "entries");
    if (!json_is_object(root) || !json_is_integer(ver) || json_integer_value(ver) != 1
        || !json_is_object(ent)) {
        json_decref(root);
        *rc = vr_err_set(err, VR_EFORMAT, "%s: not a version 1 tune cache", path);
        return NULL;
    }
    return root;
}

static int get_int(json_t *o, const char *k, int lo, int hi, int *v)
{
    json_t *x = json_object_get(o, k);
    if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi)
        return -1;
    *v = (int)json_integer_value(x);
    return 0;
}

static int get_num(json_t *o, const char *k, double *v)
{
    json_t *x = json_object_get(o, k);
    if (!json_is_number(x))
        return -1;
    *v = json_number_value(x);
    return 0;
}

int tune_cache_load(const char *path, const char *key, struct tune_choice *c, vr_err *err)
{
    int rc;
    json_t *root = read_cache(path, err, &rc);
    if (!root)
        return rc;
    json_t *e = json_object_get(json_object_get(root, "entries"), key);
    if (!e) {
        json_decref(root);
        return vr_err_set(err, VR_ENOENT, "%s: no entry for %s", path, key);
    }
    memset(c, 0, sizeof *c);
    if (!json_is_object(e) || get_int(e, "fp16", 0, 1, &c->net.fp16)
        || get_int(e, "fused", 0, 2, &c->net.fused) || get_int(e, "block", 0, 1024, &c->net.block)
        || get_int(e, "graph", 0, 1, &c->net.use_graph)
        || get_int(e, "tiles", 1, 1 << 16, &c->net.max_batch)
        || get_int(e, "frames", 1, 1024, &c->frames)
        || get_num(e, "ms_per_frame", &c->ms_per_frame) || get_num(e, "max_abs", &c->max_abs)) {
        json_decref(root);
        return vr_err_set(err, VR_EFORMAT, "%s: entry %s: missing or out-of-range field",
                          path, key);
    }
    json_decref(root);
    return 0;
}

/* ---- store ---- */

/* mkdir -p of the directory part of path. */
static int make_dirs(const char *path, vr_err *err)
{
    char d[1024];
    if (strlen(path) >= sizeof d)
        return vr_err_set(err, VR_EINVAL, "%s: path too long", path);
    snprintf(d, sizeof d, "%s", path);
    char *slash = strrchr(d, '/');
    if (!slash || slash == d)
        return 0;
    *slash = '\0';
    for (char *p = d + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(d, 0755) != 0 && errno != EEXIST)
            return vr_err_set(err, VR_EIO, "%s: cannot create: %s", d, strerror(errno));
        *p = '/';
    }
    if (mkdir(d, 0755) != 0 && errno != EEXIST)
        return vr_err_set(err, VR_EIO, "%s: cannot create: %s", d, strerror(errno));
    return 0;
}

int tune_cache_store(const char *path, const char *key, const struct tune_choice *c,
                     vr_err *err)
{
    int rc;
    vr_err ignore = { 0, "" };
    json_t *root = read_cache(path, &ignore, &rc); /* a bad file is replaced */
    if (!root) {
        root = json_pack("{s:i, s:{}}", "version", 1, "entries");
        if (!root)
            return vr_err_set(err, VR_ENOMEM, "tune cache: out of memory");
    }
    json_t *e = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f}",
                          "fp16", c->net.fp16, "fused", c->net.fused, "block", c->net.block,
                          "graph", c->net.use_graph, "tiles", c->net.max_batch,
                          "frames", c->frames, "ms_per_frame", c->ms_per_frame,
                          "max_abs", c->max_abs);
    if (!e || json_object_set_new(json_object_get(root, "entries"), key, e) != 0) {
        json_decref(root);
        return vr_err_set(err, VR_ENOMEM, "tune cache: out of memory");
    }
    if ((rc = make_dirs(path, err)) < 0) {
        json_decref(root);
        return rc;
    }
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (!text)
        return vr_err_set(err, VR_ENOMEM, "tune cache: out of memory");
    rc = storage_write_atomic(path, text, strlen(text), err);
    free(text);
    return rc < 0 ? vr_err_prefix(err, "the tune cache") : 0;
}
