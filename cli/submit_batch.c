/*
 * submit_batch.c - see submit_batch.h.
 */
#include "submit_batch.h"

#include "cmdtable.h"
#include "remux.h"

#include <dirent.h>
#include <glob.h>
#include <libavformat/avformat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int batch_is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int batch_is_pattern(const char *p)
{
    struct stat sb;
    return strpbrk(p, "*?[") && stat(p, &sb) != 0;
}

int batch_wanted(char **args, int n)
{
    return n > 1 || (n == 1 && (batch_is_dir(args[0]) || batch_is_pattern(args[0])));
}

/* The list being built. */
struct batch_list {
    char (*paths)[JOB_PATH_MAX];
    int n, cap;
};

static int batch_add(struct batch_list *l, const char *path)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        void *p = cap <= 100000 ? realloc(l->paths, (size_t)cap * sizeof *l->paths) : NULL;
        if (!p)
            return -1;
        l->paths = p;
        l->cap = cap;
    }
    snprintf(l->paths[l->n++], JOB_PATH_MAX, "%s", path);
    return 0;
}

static int batch_by_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* A directory's regular files, not hidden, sorted. */
static int batch_dir(struct batch_list *l, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return cli_usage_error("%s: cannot read the directory", dir);
    int first = l->n, rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        char p[JOB_PATH_MAX];
        struct stat sb;
        if (e->d_name[0] == '.' || snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p ||
            stat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        rc = batch_add(l, p);
    }
    closedir(d);
    qsort(l->paths + first, (size_t)(l->n - first), sizeof *l->paths, batch_by_name);
    return rc;
}

/* 0 when `path` is a video; else the reason said on stderr and -1. */
static int batch_video(const char *path)
{
    struct remux_info info;
    vr_err e = { 0 };
    av_log_set_level(AV_LOG_FATAL);
    if (remux_probe(path, &info, &e) < 0) {
        fprintf(stderr, "vrctl submit: refused %s: not a video (%s)\n", path, e.msg);
        return -1;
    }
    if (info.frames_est <= 1) {
        fprintf(stderr, "vrctl submit: refused %s: a still image, not a video "
                "(vr-worker segment-image segments images)\n", path);
        return -1;
    }
    return 0;
}

int batch_expand(char **args, int n, const char *outdir, const char *kind,
                 struct batch_item **items, int *refused)
{
    *items = NULL;
    *refused = 0;
    if (!batch_is_dir(outdir)) {
        cli_usage_error("-o %s: a batch writes into a directory (one output a video), "
                        "and this is none", outdir);
        return -1;
    }
    struct batch_list l = { 0 };
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        if (batch_is_dir(args[i])) {
            rc = batch_dir(&l, args[i]);
        } else if (batch_is_pattern(args[i])) {
            glob_t g;
            if (glob(args[i], 0, NULL, &g) != 0) {
                rc = cli_usage_error("%s: matches no file", args[i]);
                break;
            }
            for (size_t k = 0; rc == 0 && k < g.gl_pathc; k++)
                if (!batch_is_dir(g.gl_pathv[k]))
                    rc = batch_add(&l, g.gl_pathv[k]);
            globfree(&g);
        } else {
            rc = batch_add(&l, args[i]);
        }
    }
    struct batch_item *it = rc == 0 && l.n ? calloc((size_t)l.n, sizeof *it) : NULL;
    if (rc || (l.n && !it)) {
        if (rc != 2)
            cli_fail(1, "out of memory");
        free(l.paths);
        free(it);
        return -1;
    }
    int m = 0;
    for (int i = 0; i < l.n; i++) {
        if (batch_video(l.paths[i]) < 0) {
            ++*refused;
            continue;
        }
        /* <name less its extension>.<kind>.mkv: the kind said, and never
         * the input's own name when OUTDIR is the input's directory */
        const char *base = strrchr(l.paths[i], '/');
        base = base ? base + 1 : l.paths[i];
        const char *dot = strrchr(base, '.');
        int stem = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
        snprintf(it[m].in, sizeof it[m].in, "%s", l.paths[i]);
        if (snprintf(it[m].out, sizeof it[m].out, "%s/%.*s.%s.mkv", outdir, stem, base, kind) >=
            (int)sizeof it[m].out) {
            fprintf(stderr, "vrctl submit: refused %s: its output's name is too long\n",
                    l.paths[i]);
            ++*refused;
            continue;
        }
        int dup = -1;
        for (int k = 0; k < m && dup < 0; k++)
            dup = !strcmp(it[k].out, it[m].out) ? k : -1;
        if (dup >= 0) {
            fprintf(stderr, "vrctl submit: refused %s: its output %s is that of %s\n",
                    l.paths[i], it[m].out, it[dup].in);
            ++*refused;
            continue;
        }
        m++;
    }
    free(l.paths);
    *items = it;
    return m;
}
