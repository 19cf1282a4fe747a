/*
 * t-media-video-nvdec.c - the NVDEC-or-CPU decode choice as a pure function of
 * (codec, size, bit depth, NVDEC caps): an 8K H.264 source (wider than
 * NVDEC's 4096 for H.264, also on Hopper) goes to the CPU decoder with the
 * reason in words; 8K HEVC stays on NVDEC. No GPU needed.
 */
#include "vio_nvdec.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

Test(media_video_nvdec, h264_8k_goes_to_cpu)
{
    char why[200] = "";
    cr_assert_eq(vio_nvdec_can("h264", 8192, 4096, 8, NULL, why, sizeof why), 0);
    cr_assert(strstr(why, "h264") && strstr(why, "8192x4096") && strstr(why, "4096x4096"),
              "%s", why);
    cr_assert_eq(vio_nvdec_can("h264", 4096, 2048, 8, NULL, why, sizeof why), 1, "%s", why);
    cr_assert_eq(vio_nvdec_can("h264", 3840, 4320, 8, NULL, why, sizeof why), 0,
                 "taller than 4096: %s", why);
}

Test(media_video_nvdec, hevc_8k_stays_on_nvdec)
{
    char why[200] = "";
    cr_assert_eq(vio_nvdec_can("hevc", 8192, 4096, 10, NULL, why, sizeof why), 1, "%s", why);
    cr_assert_eq(vio_nvdec_can("hevc", 8192, 8192, 8, NULL, why, sizeof why), 1, "%s", why);
    cr_assert_eq(vio_nvdec_can("hevc", 16384, 8192, 8, NULL, why, sizeof why), 0);
}

Test(media_video_nvdec, bit_depth_and_unknown_codecs)
{
    char why[200] = "";
    cr_assert_eq(vio_nvdec_can("h264", 1920, 1080, 10, NULL, why, sizeof why), 0);
    cr_assert(strstr(why, "10-bit"), "%s", why);
    cr_assert_eq(vio_nvdec_can("prores", 1920, 1080, 10, NULL, why, sizeof why), 0);
    cr_assert(strstr(why, "prores"), "%s", why);
}

Test(media_video_nvdec, caps_given_by_the_caller)
{
    static const struct vio_nvdec_cap caps[] = { { "h264", 8192, 8192, 8 }, { NULL, 0, 0, 0 } };
    char why[200] = "";
    cr_assert_eq(vio_nvdec_can("h264", 8192, 4096, 8, caps, why, sizeof why), 1, "%s", why);
    cr_assert_eq(vio_nvdec_can("hevc", 1920, 1080, 8, caps, why, sizeof why), 0);
}

/* An NVDEC decoder left to auto gets one libavcodec thread: auto's frame
 * threads each add a decode surface and a frame of delay (issue 43). A
 * bench's VR_NVDEC_THREADS is taken only in 1..16. */
Test(media_video_nvdec, one_parsing_thread_unless_a_bench_says)
{
    unsetenv("VR_NVDEC_THREADS");
    cr_assert_eq(vio_nvdec_threads(), 1);
    setenv("VR_NVDEC_THREADS", "4", 1);
    cr_assert_eq(vio_nvdec_threads(), 4);
    const char *bad[] = { "0", "17", "-2", "2x", "" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("VR_NVDEC_THREADS", bad[i], 1);
        cr_assert_eq(vio_nvdec_threads(), 1, "'%s' taken", bad[i]);
    }
    unsetenv("VR_NVDEC_THREADS");
}
