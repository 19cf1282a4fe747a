/*
 * vio_lib.h - libav* process-wide: the library versions, and libav's log
 * routed through common/log.h.
 */
#ifndef VR_VIO_LIB_H
#define VR_VIO_LIB_H

#include <stdio.h>

/* Prints "FFmpeg X" and one line per library: the version running, and the
 * one built against when they differ. */
void vio_lib_versions(FILE *f);

#endif
