/*
 * t-gpuinfo-slots.c - the auto slots rule (gpuinfo/gpus.h): a core a slot,
 * 2 to 16 a GPU. One H200 ran 88% of its NVDEC ceiling with 8 slots and
 * 99.6% with 16 (issue 43), so a host with 16 cores a GPU runs 16.
 */
#include "gpus.h"

#include <criterion/criterion.h>
#include <unistd.h>

TestSuite(gpuinfo_slots);

Test(gpuinfo_slots, a_core_a_slot_up_to_16_a_gpu)
{
    cr_assert_eq(vr_gpu_slots_rule(16, 1), 16, "1 GPU, 16 cores: NVDEC's ceiling needs 16");
    cr_assert_eq(vr_gpu_slots_rule(64, 4), 16, "4 GPUs, 64 cores (the H200 host)");
    cr_assert_eq(vr_gpu_slots_rule(64, 1), 16, "more cores than slots: 16");
    cr_assert_eq(vr_gpu_slots_rule(12, 1), 12);
    cr_assert_eq(vr_gpu_slots_rule(32, 8), 4);
}

Test(gpuinfo_slots, at_least_2_a_gpu)
{
    cr_assert_eq(vr_gpu_slots_rule(2, 1), 2);
    cr_assert_eq(vr_gpu_slots_rule(1, 1), 2);
    cr_assert_eq(vr_gpu_slots_rule(8, 8), 2);
    cr_assert_eq(vr_gpu_slots_rule(4, 0), 4, "no GPU counted: as one");
    cr_assert_eq(vr_gpu_slots_rule(0, 1), 2, "no core counted");
}

Test(gpuinfo_slots, auto_is_the_rule_on_this_host)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cr_assert_eq(vr_gpu_auto_slots(1), vr_gpu_slots_rule(cores, 1));
    cr_assert_eq(vr_gpu_auto_slots(2), vr_gpu_slots_rule(cores, 2));
}
