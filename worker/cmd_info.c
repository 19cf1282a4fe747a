/*
 * cmd_info.c - `vr-worker info`: what this binary was built with and what it
 * finds at run time (GPUs, models, profiles).
 */
#include "commands.h"

#include "paths.h"

#include <stdio.h>

int cmd_info(int argc, char **argv)
{
    (void)argc;
    (void)argv;
#ifdef VR_HAVE_CUDA
    printf("build: CUDA kernels (sm_90 + PTX) and CPU reference\n");
#else
    printf("build: CPU-only (built without nvcc)\n");
#endif
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
