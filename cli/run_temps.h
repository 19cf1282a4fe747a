/*
 * run_temps.h - the reaping of `vrctl run`'s work directories (redis with
 * its AOF, storage, logs: run_workdir.h). A run stopped by Ctrl-C or kill
 * -9 keeps its directory for `--resume`; one nobody resumed within
 * RUN_TEMP_KEEP_S is removed by the next run, so a killed run's gigabytes
 * do not stay for good (issue 27, finding 12).
 */
#ifndef VR_RUN_TEMPS_H
#define VR_RUN_TEMPS_H

#include "run_workdir.h"

#define RUN_TEMP_KEEP_S (24 * 3600)

/* Removes every RUN_WORKDIR_NAME directory (in run_workdir_base()) of this user that no run
 * holds (its lock is free) and that nobody touched for RUN_TEMP_KEEP_S.
 * Each removal is logged. Returns the count removed. */
int run_temps_reap(void);

#endif
