/*
 * vio_lib.c - libav* as a whole process sees it (see vio_lib.h): the
 * versions a binary runs with, and libav's own log lines routed through
 * ours so they carry a timestamp, a level and our program name.
 */
#include "vio_lib.h"
#include "vio_video.h"

#include "log.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libswscale/swscale.h>
#include <stdarg.h>
#include <string.h>

/* ---- log ---- */

static enum log_level vio_lib_level(int av_level)
{
    if (av_level <= AV_LOG_ERROR)
        return LOG_ERROR;
    if (av_level <= AV_LOG_WARNING)
        return LOG_WARN;
    return LOG_DEBUG; /* libav's info is stream dumps and codec chatter */
}

/* Who is speaking: the codec or format ("h264", "mov,mp4,..."), else the
 * class ("SwsContext"), else nobody. */
static const char *vio_lib_who(void *ptr)
{
    const AVClass *avc = ptr ? *(const AVClass **)ptr : NULL;
    if (!avc)
        return NULL;
    const char *n = avc->item_name ? avc->item_name(ptr) : NULL;
    return n && *n && strcmp(n, "NULL") ? n : avc->class_name;
}

static void vio_lib_log(void *ptr, int level, const char *fmt, va_list vl)
{
    /* libav may send a line in pieces; each thread joins its own. */
    static _Thread_local char line[1024];
    static _Thread_local size_t len;
    if (level > av_log_get_level())
        return;
    int w = vsnprintf(line + len, sizeof line - len, fmt, vl);
    if (w > 0)
        len = len + (size_t)w < sizeof line ? len + (size_t)w : sizeof line - 1;
    if (len == 0 || (line[len - 1] != '\n' && len < sizeof line - 1))
        return;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = '\0';
    const char *who = vio_lib_who(ptr);
    if (len > 0)
        log_msg(vio_lib_level(level), "libav%s%s: %s", who ? " " : "", who ? who : "", line);
    len = 0;
}

void vio_lib_log_route(void)
{
    av_log_set_callback(vio_lib_log);
}

/* ---- versions ---- */

static void vio_lib_line(FILE *f, const char *name, unsigned built, unsigned run)
{
    fprintf(f, "  %-12s %u.%u.%u", name, AV_VERSION_MAJOR(run), AV_VERSION_MINOR(run),
            AV_VERSION_MICRO(run));
    /* A bundle runs with its own lib/; a mismatch means it did not. */
    if (built != run)
        fprintf(f, " (built with %u.%u.%u)", AV_VERSION_MAJOR(built), AV_VERSION_MINOR(built),
                AV_VERSION_MICRO(built));
    fputc('\n', f);
}

void vio_lib_versions(FILE *f)
{
    fprintf(f, "FFmpeg %s\n", av_version_info());
    vio_lib_line(f, "libavformat", LIBAVFORMAT_VERSION_INT, avformat_version());
    vio_lib_line(f, "libavcodec", LIBAVCODEC_VERSION_INT, avcodec_version());
    vio_lib_line(f, "libavutil", LIBAVUTIL_VERSION_INT, avutil_version());
    vio_lib_line(f, "libswscale", LIBSWSCALE_VERSION_INT, swscale_version());
}

/* ---- encoders ---- */

void vio_lib_encoders(FILE *f)
{
    /* what the outputs may ask for: x264/x265 on the CPU, NVENC, and the
     * lossless FFV1 the exact comparisons use */
    static const char *const names[] = { "libx264", "libx265", "h264_nvenc", "hevc_nvenc",
                                         "ffv1" };
    fprintf(f, "encoders in this libavcodec:");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        fprintf(f, " %s %s", names[i], avcodec_find_encoder_by_name(names[i]) ? "yes" : "no");
    fprintf(f, "; built in: %s (the matte's H.264, kernels/h264)\n", VIO_MATTE_H264);
}
