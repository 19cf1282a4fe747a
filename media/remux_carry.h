/*
 * remux_carry.h - the source's streams that a chunk read in place cannot
 * hold, carried beside the chunks. A chunk output is Matroska (remux.c),
 * which holds no MP4 timed text (mov_text), while an .mp4 or .mov output
 * does and `process` copies it there; so the stitch of ranges reads those
 * streams from the source itself, and the fleet's output holds what
 * `process`'s holds. Not for use outside media/.
 */
#ifndef VR_REMUX_CARRY_H
#define VR_REMUX_CARRY_H

#include "vr_err.h"

#include <stddef.h>

struct AVFormatContext;
struct AVOutputFormat;

/* Opens the source `src` (a file or a URL; its header only, nothing
 * probed) and decides which of its streams the stitch carries into an
 * output of format `of`: those `process` copies into it (vio_streams_plan)
 * that a chunk output cannot hold. note (n bytes) gets what the output
 * leaves out of the source, in `process`'s words ("" when nothing).
 * On success with at least one stream to carry, *ic is the open source
 * (the caller's: src_close_input), every other stream of it discarded, and
 * *carry (ic's nb_streams entries, the caller's: free) is 1 for each
 * stream to carry, else 0; with none, *ic and *carry are NULL. Returns 0
 * or VR_E* (the source cannot be opened; note is then left alone). */
int remux_carry_plan(const char *src, const struct AVOutputFormat *of,
                     struct AVFormatContext **ic, int **carry, char *note, size_t n,
                     vr_err *err);

#endif
