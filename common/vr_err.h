/*
 * vr_err.h - errors as values with text, shared by every module.
 *
 * Functions that can fail return 0 on success or a negative errno-style code
 * (VR_E*), and fill a caller-owned `vr_err` with a message a user can act on
 * ("chunk 12: cannot decode: invalid NAL unit"). The message is written once,
 * at the place that knows what went wrong; callers may add context in front
 * with vr_err_prefix(). A NULL `vr_err *` is accepted everywhere and means
 * "the caller does not want the text".
 */
#ifndef VR_ERR_H
#define VR_ERR_H

#include <errno.h>
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- codes (negative; 0 is success) ---- */
#define VR_OK        0
#define VR_EINVAL   (-EINVAL)    /* bad argument, option or config value */
#define VR_ENOMEM   (-ENOMEM)    /* allocation failed */
#define VR_ENOENT   (-ENOENT)    /* missing file */
#define VR_EIO      (-EIO)       /* read/write failed */
#define VR_ENOSPC   (-ENOSPC)    /* disk full */
#define VR_EACCES   (-EACCES)    /* not readable or writable here: permissions, a read-only
                                  * mount (the host's environment, not the data) */
#define VR_ENOTSUP  (-ENOTSUP)   /* unsupported op, codec, format or layout */
#define VR_ETIMEDOUT (-ETIMEDOUT) /* peer (Redis) did not answer in time */
#define VR_ECANCELED (-ECANCELED) /* job cancelled / worker draining */
#define VR_EFORMAT  (-1000)      /* corrupt or hostile input data */
#define VR_ECUDA    (-1001)      /* CUDA runtime or kernel failure */
#define VR_EREDIS   (-1002)      /* Redis protocol or connection failure */
#define VR_ECODEC   (-1003)      /* libav* decode/encode failure */
#define VR_ENOTBUILT (-1004)     /* feature not built into this binary */

typedef struct vr_err {
    int code;       /* last code set, 0 when clear */
    char msg[256];  /* human-readable, NUL-terminated, never needs freeing */
} vr_err;

/* Sets code and message; returns `code` so callers can `return vr_err_set(...)`.
 * `e` may be NULL. */
int vr_err_set(vr_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " (printf-style) to an already set message; returns e->code
 * (or VR_EINVAL when e is NULL). */
int vr_err_prefix(vr_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Clears the error. */
void vr_err_clear(vr_err *e);

/* Short name of a code ("EINVAL", "EFORMAT", ...), static storage. */
const char *vr_err_name(int code);

#ifdef __cplusplus
}
#endif

#endif
