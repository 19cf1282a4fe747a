/*
 * t-cli-edges.c - the edges of vrctl and vr-worker's command lines (issue
 * 14): --version, output containers the stitch cannot write, the same
 * answer for an unknown job from every job command, status --json figures.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs `$VR_BIN_DIR/<bin> <args>`, stdout and stderr into out; the status. */
static int run_sh(char *out, size_t n, const char *bin, const char *args)
{
    const char *d = getenv("VR_BIN_DIR");
    return tsh_out(out, n, "%s/%s %s 2>&1", d ? d : "bin", bin, args);
}

/* ---- --version ---- */

Test(cli_edges, version_from_one_place, .timeout = 30)
{
    char want[64] = "", out[4096];
    tsh_out(want, sizeof want, "cat '%s/VERSION'", getenv("VR_DATA_DIR") ? getenv("VR_DATA_DIR") : ".");
    want[strcspn(want, "\n")] = '\0';
    cr_assert(want[0], "no VERSION file");

    cr_assert_eq(run_sh(out, sizeof out, "vrctl", "--version"), 0, "%s", out);
    cr_assert(!strncmp(out, "vrctl ", 6) && strstr(out, want), "vrctl --version: %s", out);

    cr_assert_eq(run_sh(out, sizeof out, "vr-worker", "--version"), 0, "%s", out);
    cr_assert(!strncmp(out, "vr-worker ", 10) && strstr(out, want), "vr-worker --version: %s", out);
    cr_assert(strstr(out, "libavcodec") && strstr(out, "libavformat"), "no libav versions: %s", out);
}
