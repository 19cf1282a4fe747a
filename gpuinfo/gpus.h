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
 * `vr-worker serve --gpu all`): one core a slot, 2 to 16 a GPU. A slot's
 * chain (demux, NVDEC, segment, the matte encoded on the GPU, the writes)
 * keeps NVDEC busy only part of the time, so one GPU needs many: one H200
 * ran 88% of its NVDEC ceiling with 8 slots and 99.6% with 16 (docs/PERF.md,
 * issue 43). With the matte on the GPU a slot costs
 * about a quarter of a core (32 slots kept 64 cores 12% busy), so a core a
 * slot leaves room for the picture outputs' x264; 16 is serve --slots'
 * bound. It was half the cores, 2..8, when each slot's matte took two
 * cores of x264. */
#define VR_GPU_SLOTS_MIN 2
#define VR_GPU_SLOTS_MAX 16
int vr_gpu_slots_rule(long cores, int gpus);
int vr_gpu_auto_slots(int gpus);

#endif
