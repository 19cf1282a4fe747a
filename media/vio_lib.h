/*
 * vio_lib.h - libav* process-wide: the library versions, the encoders it
 * has, and libav's log routed through common/log.h.
 */
#ifndef VR_VIO_LIB_H
#define VR_VIO_LIB_H

#include <stdio.h>

/* Prints "FFmpeg X" and one line per library: the version running, and the
 * one built against when they differ. */
void vio_lib_versions(FILE *f);

/* One line: which of the encoders the outputs may use (libx264, libx265,
 * h264_nvenc, hevc_nvenc, ffv1) this libavcodec was built with. Built in
 * is not usable: NVENC also needs a GPU that has one (nvenc_host.h). */
void vio_lib_encoders(FILE *f);

/* Routes libav's log lines (av_log) through log_msg: our timestamp and
 * program name, "libav <component>:" in front, libav's level mapped to
 * ours (panic..error: error, warning: warn, info and verbose: debug) and
 * still filtered by av_log_set_level. Partial lines are joined per thread.
 * Call once, early in main. */
void vio_lib_log_route(void);

#endif
