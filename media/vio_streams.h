/*
 * vio_streams.h - what an output carries of its source besides the matte:
 * the other streams, copied (audio, subtitles, other video, data), and the
 * video stream's side data (stereo and spherical metadata, the rotation's
 * display matrix). One rule for `vr-worker process` (vio_encode.c) and the
 * stitch (remux_stitch.c), so the fleet's output holds what one process's
 * holds. What the output container cannot hold is named in one log line;
 * it never fails the output. Not for use outside media/.
 */
#ifndef VR_VIO_STREAMS_H
#define VR_VIO_STREAMS_H

#include <libavformat/avformat.h>

/* The muxer settings every output here shares (`process`, a chunk, a
 * split's chunk copy, the stitch), so that a fleet's output and one
 * process's are equal byte for byte: no random Matroska UIDs
 * (AVFMT_FLAG_BITEXACT) and no Matroska CRC-32 elements (write_crc32 0:
 * the muxer's CRC was a quarter of a stitch's CPU; a chunk is checked by
 * its SHA-256, a stitch's output by reading it back). Before
 * avformat_write_header; other muxers only get the flag. */
void vio_streams_mux_settings(AVFormatContext *oc);

/* Decides, for each stream of ic, whether an output of format `of` copies
 * it: copy[i] (ic->nb_streams entries, filled) is 1 for every audio,
 * subtitle, data and video stream other than the matte's source `vi` that
 * the container can hold, 0 for the rest: vi itself, cover art, attachments
 * (fonts), streams the caller discarded, codecs the container refuses. The
 * dropped ones are said in one sentence: logged as a warning naming `path`
 * when note is NULL, else written into note (n bytes; "" when none) for the
 * caller to report under the name its user knows (the stitch's `path` is a
 * /proc/self/fd name). Returns the number of streams copied. */
int vio_streams_plan(const AVFormatContext *ic, int vi, const AVOutputFormat *of,
                     const char *path, int *copy, char *note, size_t n);

/* Copies the side data of the source video stream `src` that still holds
 * for a matte of it (stereo 3D, spherical, display matrix) onto `dst`; the
 * display matrix is added only where the muxer writes it (the MP4 / MOV
 * family; FFmpeg 5.1's Matroska muxer does not), else one warning says the
 * rotation is dropped. */
void vio_streams_side_data(AVStream *dst, const AVStream *src, const AVOutputFormat *of,
                           const char *path);

/* Adds the display matrix m (nine int32) to dst where the muxer writes it,
 * else says in one warning that the rotation is dropped. */
void vio_streams_rotation(AVStream *dst, const int32_t *m, const AVOutputFormat *of,
                          const char *path);

#endif
