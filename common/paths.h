/*
 * paths.h - finding the project's data (models/, configs/) from any cwd.
 *
 * Search order for a relative name: as given (relative to the cwd), then
 * $VR_DATA_DIR/name, then <dir of the running binary>/../name (so bin/ and a
 * relocatable bundle both work), then <that>/../share/vrseg/name.
 */
#ifndef VR_PATHS_H
#define VR_PATHS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the first existing candidate for `name` into out (size n) and
 * returns 0; returns VR_ENOENT (out holds `name`) when none exists. */
int vr_data_path(const char *name, char *out, size_t n);

/* Directory of the running executable, without trailing slash. */
int vr_exe_dir(char *out, size_t n);

#ifdef __cplusplus
}
#endif

#endif
