/*
 * gpus.c - GPUs visible to this process (see gpus.h).
 */
#include "gpus.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

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

int vr_gpu_slots_rule(long cores, int gpus, int max)
{
    long per = cores / (gpus > 0 ? gpus : 1);
    return per < VR_GPU_SLOTS_MIN ? VR_GPU_SLOTS_MIN : per > max ? max : (int)per;
}

int vr_gpu_auto_slots(int gpus, int threads)
{
    return vr_gpu_slots_rule(sysconf(_SC_NPROCESSORS_ONLN), gpus,
                             threads ? VR_GPU_THREAD_SLOTS_MAX : VR_GPU_SLOTS_MAX);
}
