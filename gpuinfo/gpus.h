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
 * `vr-worker serve --gpu all`): one core a slot, 2 to a bound a GPU. A
 * slot's chain (demux, NVDEC, segment, the matte encoded on the GPU, the
 * writes) keeps NVDEC busy only part of the time, so one GPU needs several.
 * The bound depends on how the slots run (serve --slot-mode):
 * - threads of one process a GPU (the default): 10. On an H200 with the
 *   14 400-frame 8K60 clip (docs/PERF.md, "Slots a GPU as threads"), 10
 *   slots ran 1 GPU at 361.9 fps and 2 at 639.3, against 368.1 / 630.0
 *   with 16, and a chunk's first decoded frame came 0.9-1.0 s after its
 *   start against 1.2-1.4 s: each slot's share of NVDEC decodes its
 *   pre-roll sooner, and a GPU warms 10 decoders, not 16;
 * - processes: 16 (one H200 ran 88% of its NVDEC ceiling with 8 process
 *   slots and 99.6% with 16, issue 43).
 * With the matte on the GPU a slot costs about a quarter of a core, so a
 * core a slot leaves room for the picture outputs' x264. */
#define VR_GPU_SLOTS_MIN 2
#define VR_GPU_SLOTS_MAX 16         /* processes; also serve --slots' bound */
#define VR_GPU_THREAD_SLOTS_MAX 10  /* threads of one process a GPU */
/* The rule for `cores` shared by `gpus` GPUs, at most `max` a GPU. */
int vr_gpu_slots_rule(long cores, int gpus, int max);
/* The rule on this host; threads: the slots run as threads (the bound 10,
 * else 16). */
int vr_gpu_auto_slots(int gpus, int threads);

#endif
