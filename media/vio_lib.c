/*
 * vio_lib.c - libav* as a whole process sees it (see vio_lib.h): the
 * versions a binary runs with, and libav's own log lines routed through
 * ours so they carry a timestamp, a level and our program name.
 */
#include "vio_lib.h"

#include "log.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libswscale/swscale.h>

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
