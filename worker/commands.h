/*
 * commands.h - the vr-worker subcommands; each lives in worker/cmd_<name>.c
 * and is listed in worker/main.c's table.
 */
#ifndef VR_WORKER_COMMANDS_H
#define VR_WORKER_COMMANDS_H

int cmd_segment_image(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_process(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
