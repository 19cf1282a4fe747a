/*
 * gpus.c - GPUs visible to this process (see gpus.h).
 */
#include "gpus.h"

#include <dirent.h>
#include <stdlib.h>

int vr_gpu_count(void)
{
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (vis) {
        if (!*vis)
            return 0;
        int n = 1;
        for (const char *p = vis; *p; p++)
            n += *p == ',';
        return n;
    }
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}
