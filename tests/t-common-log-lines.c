/*
 * t-common-log-lines.c - log lines carry an ISO-8601 local timestamp with
 * milliseconds, and libav's own lines come through the same log, with
 * their level mapped and the libav component named.
 */
#include "log.h"
#include "util-redis.h"
#include "vio_lib.h"

#include <criterion/criterion.h>
#include <libavcodec/avcodec.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void expect_match(const char *text, const char *re)
{
    regex_t r;
    cr_assert_eq(regcomp(&r, re, REG_EXTENDED | REG_NEWLINE), 0);
    int m = regexec(&r, text, 0, NULL, 0);
    regfree(&r);
    cr_expect_eq(m, 0, "'%s' does not match %s", text, re);
}

#define STAMP "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}[+-][0-9]{2}:[0-9]{2} "

static void say_hello(void)
{
    log_info("chunk %d: hello", 3);
}

Test(common_log_lines, iso_timestamp_with_ms)
{
    char out[1024];
    log_init("t-log");
    tcapture_stderr(say_hello, out, sizeof out);
    expect_match(out, STAMP "t-log: info: chunk 3: hello$");
}

static void libav_lines(void)
{
    AVCodecContext *cc = avcodec_alloc_context3(avcodec_find_decoder(AV_CODEC_ID_H264));
    av_log(cc, AV_LOG_WARNING, "a warning in %d ", 2);
    av_log(cc, AV_LOG_WARNING, "parts\n");
    av_log(NULL, AV_LOG_ERROR, "no context\n");
    av_log(NULL, AV_LOG_DEBUG, "too chatty\n");
    avcodec_free_context(&cc);
}

Test(common_log_lines, libav_routed_through_our_log)
{
    char out[2048];
    log_init("t-log");
    vio_lib_log_route();
    tcapture_stderr(libav_lines, out, sizeof out);
    expect_match(out, STAMP "t-log: warn: libav h264: a warning in 2 parts$");
    expect_match(out, STAMP "t-log: error: libav: no context$");
    cr_expect(!strstr(out, "too chatty"), "%s", out);
}
