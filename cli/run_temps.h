/*
 * run_temps.h - `vrctl run`'s temporary directories (redis socket, storage,
 * logs: gigabytes at 8K). Each holds an `owner` file naming the vrctl that
 * made it (pid and start time), so a run killed with -9, which cannot clean
 * up, has its directory removed by the next run (issue 27, finding 12).
 */
#ifndef VR_RUN_TEMPS_H
#define VR_RUN_TEMPS_H

#include "vr_err.h"

#include <stddef.h>

#define RUN_TEMP_PREFIX "/tmp/vrctl-run-"

/* Creates RUN_TEMP_PREFIX "XXXXXX" (mode 0700) with its owner file; its
 * name into dir (n bytes). 0 or VR_E* with the reason. */
int run_temp_make(char *dir, size_t n, vr_err *err);

/* Removes a directory run_temp_make made (anything not under
 * RUN_TEMP_PREFIX is refused): 0, or VR_EIO. */
int run_temp_remove(const char *dir);

/* Removes every RUN_TEMP_PREFIX directory of this user whose owner is no
 * longer running (its pid gone, or reused by a process started at another
 * time); one without an owner file (being made, or an old version's) is
 * left. Each removal is logged. Returns the count removed. */
int run_temps_reap(void);

#endif
