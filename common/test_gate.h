/*
 * test_gate.h - a test hook: a step held while a file the test names
 * exists, so that a test can keep a stitch, an upload or a worker's commit
 * going for as long as it looks at the rest of the fleet,
 * with no guess at the machine's speed (clock_test_delay_ms is at most a
 * second). Unset in production: one getenv.
 */
#ifndef VR_TEST_GATE_H
#define VR_TEST_GATE_H

#include "log.h"

#include <stdlib.h>
#include <unistd.h>

#define TEST_GATE_MAX_MS 60000 /* a test that forgot its gate still ends */

/* Waits while the file named by environment variable `env` exists (at
 * most TEST_GATE_MAX_MS); says so in the log once, naming `what`. */
static inline void test_gate(const char *env, const char *what)
{
    const char *path = getenv(env);
    if (!path || !path[0] || access(path, F_OK) != 0)
        return;
    log_info("test hook %s: %s held while %s exists", env, what, path);
    for (int ms = 0; ms < TEST_GATE_MAX_MS && access(path, F_OK) == 0; ms += 50)
        usleep(50000);
}

#endif
