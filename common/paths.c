/*
 * paths.c - data file lookup relative to the binary (see paths.h).
 */
#include "paths.h"

#include "vr_err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int vr_exe_dir(char *out, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", out, n - 1);
    if (len <= 0)
        return VR_ENOENT;
    out[len] = '\0';
    char *slash = strrchr(out, '/');
    if (slash)
        *slash = '\0';
    return 0;
}

static int try_path(char *out, size_t n, const char *a, const char *b, const char *c)
{
    int w = snprintf(out, n, "%s%s%s", a, b, c);
    return w > 0 && (size_t)w < n && access(out, R_OK) == 0;
}

int vr_data_path(const char *name, char *out, size_t n)
{
    if (try_path(out, n, "", "", name) || name[0] == '/')
        goto found_or_abs;
    const char *env = getenv("VR_DATA_DIR");
    if (env && *env && try_path(out, n, env, "/", name))
        return 0;
    char exe[4096];
    if (vr_exe_dir(exe, sizeof exe) == 0) {
        if (try_path(out, n, exe, "/../", name))
            return 0;
        if (try_path(out, n, exe, "/../share/vrseg/", name))
            return 0;
    }
    snprintf(out, n, "%s", name);
    return VR_ENOENT;
found_or_abs:
    snprintf(out, n, "%s", name);
    return access(out, R_OK) == 0 ? 0 : VR_ENOENT;
}
