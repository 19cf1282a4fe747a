/*
 * nvenc_host.c - NVENC's presence, probed once per host (nvenc_host.h).
 */
#include "nvenc_host.h"

#include "log.h"
#include "nvml.h"
#include "storage.h"
#include "tune.h"
#include "vio_video.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define NVENC_MEMO_MAX 65536

/* The recorded answer for `key` in text ("key\t0|1" lines): 0/1, or -1. */
static int memo_find(const char *text, const char *key)
{
    size_t k = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, key, k) && l[k] == '\t' && (l[k + 1] == '0' || l[k + 1] == '1'))
            return l[k + 1] - '0';
    return -1;
}

/* The memo file beside the tune cache, its directory created (0 or -1). */
static int memo_dir(char *dir, size_t n)
{
    char cache[STORAGE_PATH_MAX];
    if (tune_cache_path(cache, sizeof cache, NULL) < 0)
        return -1;
    snprintf(dir, n, "%s", dirname(cache));
    return 0;
}

/* Under the host's lock: the memo's answer, else a probe recorded in it. */
static int memo_answer(const char *dir, const char *key, const char **how)
{
    char path[STORAGE_PATH_MAX + 16], lock[STORAGE_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/nvenc.txt", dir);
    snprintf(lock, sizeof lock, "%s/nvenc.lock", dir);
    int fd = open(lock, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0 || flock(fd, LOCK_EX) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    int has = storage_read_file(path, NVENC_MEMO_MAX, &text, &len, NULL) == 0
                  ? memo_find(text, key) : -1;
    *how = "recorded for this GPU and driver";
    if (has < 0) {
        vr_err e = { 0 };
        has = vio_encoder_probe("h264_nvenc", &e) == 0;
        *how = "probed once for this host";
        if (!has)
            log_info("NVENC probe: %s", e.msg);
        size_t n = len + strlen(key) + 4;
        char *upd = malloc(n + 1);
        if (upd) {
            snprintf(upd, n + 1, "%s%s\t%d\n", text ? text : "", key, has);
            vr_err we = { 0 };
            if (storage_write_atomic(path, upd, strlen(upd), &we) < 0)
                log_warn("NVENC memo: %s", we.msg);
        }
        free(upd);
    }
    free(text);
    flock(fd, LOCK_UN);
    close(fd);
    return has;
}

int nvenc_host_available(int gpu, const char **how)
{
    const char *why = "unknown (no NVML); tried at the first encode";
    struct vr_nvml *n = NULL;
    char key[200] = "", dir[STORAGE_PATH_MAX];
    int has = -1;
    if (nvml_open(NULL, gpu, &n, NULL) == 0 && nvml_has_encoder(n, NULL) == 0) {
        has = 0;
        why = "NVML: no encoder";
    } else if (n && nvml_identity(n, key, sizeof key) == 0 && memo_dir(dir, sizeof dir) == 0 &&
               storage_mkdirs(dir, NULL) == 0) {
        has = memo_answer(dir, key, &why);
    }
    nvml_close(&n);
    if (how)
        *how = why;
    return has != 0;
}

int nvenc_host_recorded(int gpu, char *ident, size_t n)
{
    struct vr_nvml *nv = NULL;
    char key[200] = "", dir[STORAGE_PATH_MAX], path[STORAGE_PATH_MAX + 16];
    int has = -1;
    if (nvml_open(NULL, gpu, &nv, NULL) == 0 && nvml_identity(nv, key, sizeof key) == 0) {
        if (ident)
            snprintf(ident, n, "%s", key);
        if (nvml_has_encoder(nv, NULL) == 0) {
            has = 0;
        } else if (memo_dir(dir, sizeof dir) == 0) {
            char *text = NULL;
            size_t len = 0;
            snprintf(path, sizeof path, "%s/nvenc.txt", dir);
            if (storage_read_file(path, NVENC_MEMO_MAX, &text, &len, NULL) == 0)
                has = memo_find(text, key);
            free(text);
        }
    }
    nvml_close(&nv);
    return has;
}
