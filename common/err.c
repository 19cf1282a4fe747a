/*
 * err.c - the vr_err value: code plus a message built at the failure site.
 */
#include "vr_err.h"

#include <stdio.h>
#include <string.h>

int vr_err_set(vr_err *e, int code, const char *fmt, ...)
{
    if (!e)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->code = code;
    return code;
}

int vr_err_prefix(vr_err *e, const char *fmt, ...)
{
    if (!e)
        return VR_EINVAL;
    char head[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    char old[sizeof e->msg];
    memcpy(old, e->msg, sizeof old);
    size_t hl = strlen(head);
    if (hl + 2 < sizeof e->msg) {
        memcpy(e->msg, head, hl);
        memcpy(e->msg + hl, ": ", 2);
        size_t room = sizeof e->msg - hl - 3;
        size_t ol = strnlen(old, room);
        memcpy(e->msg + hl + 2, old, ol);
        e->msg[hl + 2 + ol] = '\0';
    }
    return e->code;
}

void vr_err_clear(vr_err *e)
{
    if (!e)
        return;
    e->code = 0;
    e->msg[0] = '\0';
}

const char *vr_err_name(int code)
{
    switch (code) {
    case VR_OK:        return "OK";
    case VR_EINVAL:    return "EINVAL";
    case VR_ENOMEM:    return "ENOMEM";
    case VR_ENOENT:    return "ENOENT";
    case VR_EIO:       return "EIO";
    case VR_ENOSPC:    return "ENOSPC";
    case VR_EACCES:    return "EACCES";
    case VR_ENOTSUP:   return "ENOTSUP";
    case VR_ETIMEDOUT: return "ETIMEDOUT";
    case VR_ECANCELED: return "ECANCELED";
    case VR_EFORMAT:   return "EFORMAT";
    case VR_ECUDA:     return "ECUDA";
    case VR_EREDIS:    return "EREDIS";
    case VR_ECODEC:    return "ECODEC";
    case VR_ENOTBUILT: return "ENOTBUILT";
    default:           return "ERROR";
    }
}
