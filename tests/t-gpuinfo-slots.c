/*
 * t-gpuinfo-slots.c - the auto slots rule (gpuinfo/gpus.h): a core a slot,
 * 2 to 10 a GPU as threads (10 ran an H200 within 2% of 16 with each
 * chunk's first frame 0.4 s sooner), 2 to 16 as processes (88% of NVDEC's
 * ceiling with 8, 99.6% with 16; issue 43).
 */
#include "gpus.h"

#include <criterion/criterion.h>
#include <unistd.h>

TestSuite(gpuinfo_slots);

Test(gpuinfo_slots, a_core_a_slot_up_to_16_a_gpu_as_processes)
{
    cr_assert_eq(vr_gpu_slots_rule(16, 1, VR_GPU_SLOTS_MAX), 16, "1 GPU, 16 cores: 16 processes");
    cr_assert_eq(vr_gpu_slots_rule(64, 4, VR_GPU_SLOTS_MAX), 16, "4 GPUs, 64 cores (the H200 host)");
    cr_assert_eq(vr_gpu_slots_rule(64, 1, VR_GPU_SLOTS_MAX), 16, "more cores than slots: 16");
    cr_assert_eq(vr_gpu_slots_rule(12, 1, VR_GPU_SLOTS_MAX), 12);
    cr_assert_eq(vr_gpu_slots_rule(32, 8, VR_GPU_SLOTS_MAX), 4);
}

Test(gpuinfo_slots, a_core_a_slot_up_to_10_a_gpu_as_threads)
{
    cr_assert_eq(VR_GPU_THREAD_SLOTS_MAX, 10);
    cr_assert_eq(vr_gpu_slots_rule(16, 1, VR_GPU_THREAD_SLOTS_MAX), 10, "1 GPU, 16 cores: 10 threads");
    cr_assert_eq(vr_gpu_slots_rule(64, 4, VR_GPU_THREAD_SLOTS_MAX), 10, "the H200 host");
    cr_assert_eq(vr_gpu_slots_rule(8, 1, VR_GPU_THREAD_SLOTS_MAX), 8, "fewer cores: a core a slot");
    cr_assert_eq(vr_gpu_slots_rule(2, 4, VR_GPU_THREAD_SLOTS_MAX), 2, "at least 2");
}

Test(gpuinfo_slots, at_least_2_a_gpu)
{
    cr_assert_eq(vr_gpu_slots_rule(2, 1, VR_GPU_SLOTS_MAX), 2);
    cr_assert_eq(vr_gpu_slots_rule(1, 1, VR_GPU_SLOTS_MAX), 2);
    cr_assert_eq(vr_gpu_slots_rule(8, 8, VR_GPU_SLOTS_MAX), 2);
    cr_assert_eq(vr_gpu_slots_rule(4, 0, VR_GPU_SLOTS_MAX), 4, "no GPU counted: as one");
    cr_assert_eq(vr_gpu_slots_rule(0, 1, VR_GPU_SLOTS_MAX), 2, "no core counted");
}

Test(gpuinfo_slots, auto_is_the_rule_on_this_host)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cr_assert_eq(vr_gpu_auto_slots(1, 0), vr_gpu_slots_rule(cores, 1, VR_GPU_SLOTS_MAX));
    cr_assert_eq(vr_gpu_auto_slots(2, 0), vr_gpu_slots_rule(cores, 2, VR_GPU_SLOTS_MAX));
    cr_assert_eq(vr_gpu_auto_slots(1, 1), vr_gpu_slots_rule(cores, 1, VR_GPU_THREAD_SLOTS_MAX));
}
