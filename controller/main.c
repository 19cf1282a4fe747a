/*
 * main.c - vr-controller: splits jobs into chunks, enqueues them in Redis,
 * reclaims stalled chunks, stitches and aggregates. Subcommands from a table.
 */
#include "cli.h"

static const struct cli_cmd controller_cmds[] = {
    { "run", 0, CLI_DEFAULT | CLI_NOT_BUILT,
      "--redis URL --storage DIR [--lease-seconds N]",
      "consume jobs and results until stopped (the default command)", NULL },
    { 0 }
};

int main(int argc, char **argv)
{
    return cli_main("vr-controller", "splits, distributes and stitches vrseg jobs",
                    controller_cmds, argc, argv);
}
