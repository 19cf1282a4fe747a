/*
 * cmd_info.c - `vr-worker info`: what this binary was built with and what it
 * finds at run time: versions, GPUs (through NVML, without creating a CUDA
 * context), whether they have NVENC as this host recorded it, the encoders
 * libavcodec has, which encoder "auto" gives the matte and why, the tune
 * cache, models and profiles. Quick and read-only:
 * it probes nothing.
 */
#include "commands.h"

#include "gpus.h"
#include "nvenc_host.h"
#include "paths.h"
#include "tune.h"
#include "version.h"
#include "vio_lib.h"
#include "vio_video.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void info_gpus(void)
{
    int n = vr_gpu_count();
    if (n == 0) {
        printf("GPUs: none found (no NVIDIA driver, or CUDA_VISIBLE_DEVICES is empty): "
               "only --cpu works here\n");
        return;
    }
    printf("GPUs: %d\n", n);
    for (int i = 0; i < n; i++) {
        char ident[200] = "";
        int nvenc = nvenc_host_recorded(i, ident, sizeof ident);
        char *bar = strchr(ident, '|');
        if (bar)
            *bar = '\0';
        printf("  GPU %d: %s", i, ident[0] ? ident : "(NVML unavailable: name unknown)");
        if (bar)
            printf(", driver %s", bar + 1);
        const char *why;
        printf(", NVENC %s%s\n", nvenc == 1   ? "present"
                                 : nvenc == 0 ? "none: the matte's encoder is "
                                              : "not known yet (the first worker probes it once)",
               nvenc == 0 ? vio_matte_encoder(1, 0, 4096, 2048, &why) : "");
    }
}

/* What "auto" codes the matte with (the product's 4096x2048 matte of an 8K
 * SBS source): on this host's GPU 0 as recorded, and on --cpu. */
static void info_matte_encoder(void)
{
    const char *why;
    const char *name;
    const int gpu = vr_gpu_count() > 0;
    const int nvenc = gpu ? nvenc_host_recorded(0, NULL, 0) : 0;
    if (gpu) {
        name = vio_matte_encoder(1, nvenc != 0, 4096, 2048, &why);
        printf("matte encoder (auto) on GPU runs: %s%s (%s)\n", name,
               nvenc < 0 ? " if NVENC opens, else " VIO_MATTE_H264 : "", why);
    }
    name = vio_matte_encoder(0, 0, 4096, 2048, &why);
    printf("matte encoder (auto) on --cpu: %s (%s); `encoder` in the config names another "
           "(" VIO_MATTE_H264 ", libx264, h264_nvenc)\n", name, why);
    /* quality's full-size matte of an 8K source */
    name = vio_matte_encoder(gpu, nvenc != 0, 8192, 4096, &why);
    printf("matte encoder (auto) for a matte over 4096 (quality at 8K) on %s runs: %s%s (%s)\n",
           gpu ? "GPU" : "--cpu", name, nvenc < 0 ? " if NVENC opens, else libx265" : "", why);
}

static void info_tune_cache(void)
{
    char path[4096];
    struct stat st;
    if (tune_cache_path(path, sizeof path, NULL) < 0)
        printf("tune cache: none (neither VR_TUNE_CACHE nor HOME is set)\n");
    else if (stat(path, &st) == 0)
        printf("tune cache: %s (%lld bytes)\n", path, (long long)st.st_size);
    else
        printf("tune cache: %s (absent: `vr-worker tune` fills it; untuned defaults meanwhile)\n",
               path);
}

int cmd_info(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("vr-worker %s\n", vr_version());
#ifdef VR_HAVE_CUDA
    printf("build: CUDA kernels (sm_90 + PTX) and CPU reference\n");
#else
    printf("build: CPU-only (built without nvcc)\n");
#endif
    vio_lib_versions(stdout);
    vio_lib_encoders(stdout);
    info_gpus();
    info_matte_encoder();
    info_tune_cache();
    static const char *const files[] = {
        "models/selfie_segmentation.tflite", "models/selfie_segmentation_landscape.tflite",
        "configs/fast.json", "configs/balanced.json", "configs/quality.json",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[4096];
        int rc = vr_data_path(files[i], path, sizeof path);
        printf("%-44s %s\n", files[i], rc == 0 ? path : "MISSING");
    }
    return 0;
}
