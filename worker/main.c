/*
 * main.c - vr-worker: one process per GPU (or --cpu) that segments people.
 * The subcommands come from the table below; help is generated from it.
 */
#include "cli.h"
#include "commands.h"

static const struct cli_cmd worker_cmds[] = {
    { "segment-image", cmd_segment_image, 0,
      "[--model PATH] [--layout mono|sbs|tb] [--profile NAME] [-c FILE] [--raw] IN OUT",
      "segment the people in a PNG/JPEG image and write the 8-bit mask as PNG",
      "  --model PATH     tflite model (default: the profile's)\n"
      "  --layout L       mono, sbs (side-by-side) or tb (top-bottom); default mono\n"
      "  --profile NAME   fast, balanced (default) or quality (configs/NAME.json)\n"
      "  -c FILE          JSON overrides on top of the profile\n"
      "  --raw            IN must be the model's input size: one network pass, no\n"
      "                   tiling or refinement; writes sigmoid*255, rounded\n" },
    { "info", cmd_info, 0, "",
      "show the build (CUDA or CPU-only), GPUs and models found", NULL },
    { "process", 0, CLI_NOT_BUILT, "[--gpu N | --cpu] [--profile P] IN -o OUT",
      "segment a whole video: decode, segment, encode", NULL },
    { "serve", 0, CLI_NOT_BUILT, "--redis URL --storage DIR (--gpu N | --gpu all | --cpu)",
      "pull chunks from Redis and process them", NULL },
    { "tune", 0, CLI_NOT_BUILT, "[--force]",
      "auto-tune the CUDA kernels for this GPU and print the table", NULL },
    { 0 }
};

int main(int argc, char **argv)
{
    return cli_main("vr-worker", "segments people in VR video, one process per GPU",
                    worker_cmds, argc, argv);
}
