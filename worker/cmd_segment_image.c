/* cmd_segment_image.c - placeholder until the image path lands. */
#include "commands.h"

#include <stdio.h>

int cmd_segment_image(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "vr-worker segment-image: not built yet\n");
    return 2;
}
