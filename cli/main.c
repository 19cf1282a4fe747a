/*
 * main.c - vrctl: the user's command line for vrseg jobs. Subcommands from a
 * table; help is generated from it.
 */
#include "cli.h"

static const struct cli_cmd vrctl_cmds[] = {
    { "submit", 0, CLI_NOT_BUILT,
      "IN -o OUT [--profile P] [--output KIND] [--chunk-seconds S] [--priority N] [--wait]",
      "validate a video and enqueue it as a job; prints the job id", NULL },
    { "status", 0, CLI_NOT_BUILT, "[JOB] [--json]", "show jobs and their progress", NULL },
    { "watch", 0, CLI_NOT_BUILT, "JOB", "live progress bar until the job ends", NULL },
    { "workers", 0, CLI_NOT_BUILT, "", "list live workers with GPU, chunk and fps", NULL },
    { "cancel", 0, CLI_NOT_BUILT, "JOB", "cancel a job: drop its chunks, stop running ones", NULL },
    { "retry", 0, CLI_NOT_BUILT, "JOB", "re-run a failed job's failed chunks", NULL },
    { "metrics", 0, CLI_NOT_BUILT, "JOB [--json]", "per-stage timings and percentiles of a job", NULL },
    { "run", 0, CLI_NOT_BUILT, "IN -o OUT [--workers N] [--cpu]",
      "all-in-one local mode: private redis, controller and workers", NULL },
    { 0 }
};

int main(int argc, char **argv)
{
    return cli_main("vrctl", "submit and watch vrseg background-removal jobs",
                    vrctl_cmds, argc, argv);
}
