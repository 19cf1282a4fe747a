/*
 * version.c - the version every binary prints (see version.h). The string
 * comes from the Makefile (VERSION plus `git describe`), passed to this
 * file alone so a new commit rebuilds one object.
 */
#include "version.h"

#ifndef VR_VERSION
#define VR_VERSION "unknown"
#endif

const char *vr_version(void) { return VR_VERSION; }
