/*
 * gpus.h - how many NVIDIA GPUs this process may use, without a CUDA call
 * (a parent that forks one worker per GPU must not initialise CUDA first).
 */
#ifndef VR_GPUS_H
#define VR_GPUS_H

/* The count of CUDA_VISIBLE_DEVICES when it is set (0 when empty), else the
 * driver's listing in /proc/driver/nvidia/gpus; 0 without a driver. */
int vr_gpu_count(void);

#endif
