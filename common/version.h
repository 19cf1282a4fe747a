/*
 * version.h - vrseg's version: the VERSION file, plus `git describe` when
 * built in a git checkout ("0.1.0 (git 941e04c-dirty)").
 */
#ifndef VR_VERSION_H
#define VR_VERSION_H

/* A static string. */
const char *vr_version(void);

#endif
