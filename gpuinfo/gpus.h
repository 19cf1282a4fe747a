/*
 * gpus.h - how many NVIDIA GPUs this process may use, without a CUDA call
 * (a parent that forks one worker per GPU must not initialise CUDA first).
 */
#ifndef VR_GPUS_H
#define VR_GPUS_H

/* The count of CUDA_VISIBLE_DEVICES when it is set (0 when empty), else the
 * driver's listing in /proc/driver/nvidia/gpus; 0 without a driver. */
int vr_gpu_count(void);

/* Chunks in flight per GPU when the user leaves it to us (`vrctl run`,
 * `vr-worker serve --gpu all`): one NVDEC session decodes 8K HEVC at ~40-60
 * fps while its chunk also waits on the CPU matte encode, so several per GPU
 * keep NVDEC busy; each needs about two cores of x264. Half the host's cores
 * per GPU, 2 to 8 (an H100 has 7 NVDEC engines). Measured on an H100 with 16
 * cores: 3 slots 95 fps, 6 117, 8 125 (docs/PERF.md). */
int vr_gpu_auto_slots(int gpus);

#endif
