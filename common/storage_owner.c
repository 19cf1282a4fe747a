/*
 * storage_owner.c - the owner tag a fleet process puts in its temp names
 * (storage.h, "temporaries owned"): set once at start-up ("c:<controller>",
 * "w:<worker>"), read by storage.c when it names a temp and by
 * storage_temps.c when it sweeps. A leaf: both call it, it calls neither.
 */
#include "storage.h"

#include <stdio.h>
#include <string.h>

static char storage_owner[STORAGE_OWNER_MAX];
/* a thread's own, which wins: each worker of `serve --slot-mode threads`
 * names its temporaries after itself */
static _Thread_local char storage_owner_thread[STORAGE_OWNER_MAX];

int storage_temp_owner_valid(const char *o)
{
    size_t n = strlen(o);
    return n >= 1 && n < STORAGE_OWNER_MAX &&
           strspn(o, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:._-") == n;
}

int storage_temp_owner_set(const char *owner)
{
    if (!owner || !storage_temp_owner_valid(owner))
        return VR_EINVAL;
    snprintf(storage_owner, sizeof storage_owner, "%s", owner);
    return 0;
}

int storage_temp_owner_set_thread(const char *owner)
{
    if (!owner || !storage_temp_owner_valid(owner))
        return VR_EINVAL;
    snprintf(storage_owner_thread, sizeof storage_owner_thread, "%s", owner);
    return 0;
}

const char *storage_temp_owner(void)
{
    return storage_owner_thread[0] ? storage_owner_thread : storage_owner;
}
