/*
 * remux_stitch.h - the stitch of remux_stitch.c: processed chunks back into
 * one output by stream copy, at once (remux_stitch) or chunk by chunk as
 * they finish (struct remux_stitcher), from copied chunks with the source
 * or from chunks read in place with their sidecars. remux.h includes it;
 * what the stitch keeps of the source is said in remux.h.
 */
#ifndef VR_REMUX_STITCH_H
#define VR_REMUX_STITCH_H

#include "vr_err.h"

/* Stitches n processed chunks (paths) into `out` (container chosen from its
 * extension; written to a temporary name, checked, fsync'd and renamed)
 * with `src`'s other streams, metadata and timestamps. chunk_frames[i] is
 * the number of frames chunk i must hold (from the split). Checks the frame
 * count and each frame's time and fails with the chunk named. Returns 0 or VR_E*.
 * Equal to remux_stitch_begin, remux_stitch_add for each chunk, then
 * remux_stitch_end. */
int remux_stitch(const char *src, const char *const *chunks, int n,
                 const long long *chunk_frames, const char *out, vr_err *err);

/* The same stitch, fed chunk by chunk as they finish, so that little is
 * left to do after the last one: begin once chunk 0 exists (it gives the
 * matte's stream parameters), add the chunks in order, end after the last.
 * Until end has checked it the output is only a temporary file; abort
 * removes it. After a failed add only abort is left. */
struct remux_stitcher;
int remux_stitch_begin(const char *src, const char *chunk0, const long long *chunk_frames,
                       int n, const char *out, struct remux_stitcher **s, vr_err *err);
/* `input`, the chunk's input copy (or NULL), lets a chunk hold fewer frames
 * than the split gave it: those its decoder dropped (--on-decode-error
 * conceal), the rest placed by their times in it. */
int remux_stitch_add(struct remux_stitcher *s, const char *chunk, const char *input,
                     vr_err *err);
int remux_stitch_added(const struct remux_stitcher *s); /* = the next chunk's index */
/* Sets how many chunks the stitch takes in all (begun with an upper
 * bound: chunks cut while the job ran, fewer than its pieces). */
void remux_stitch_expect(struct remux_stitcher *s, int n);
long long remux_stitch_frames(const struct remux_stitcher *s); /* video frames written */
/* What the stitch left out of the source ("2 source streams not copied
 * into this matroska file: stream 3 (attachment ttf): attachments are not
 * carried"), or "": said by the caller, under the output's real name (the
 * stitcher logs nothing of it). Valid while s lives. */
const char *remux_stitch_note(const struct remux_stitcher *s);

/* The stitch of chunks read in place (remux_range.h): each chunk output
 * holds its matte and the other streams' packets its range owns, and its
 * sidecar (remux_ts.h) their exact times. Stream 0 of the output is the
 * matte (chunk 0's parameters, the sidecar's time base), then chunk 0's
 * other streams that the container holds, then, with `src` (the source;
 * NULL: none), the source's streams the output holds but a chunk cannot
 * (MP4 timed text: remux_carry.h), read from src as the chunks are added;
 * metadata and the video's side data from chunk 0. Each add checks the
 * chunk's frame count against its sidecar and that it starts after the
 * chunk before; end checks every frame's time against the sidecars'. Then
 * as above: remux_stitch_added / _end / _abort. */
int remux_stitch_begin_ranges(const char *src, const char *chunk0, const char *chunk0_ts, int n,
                              const char *out, struct remux_stitcher **s, vr_err *err);
int remux_stitch_add_ts(struct remux_stitcher *s, const char *chunk, const char *ts,
                        vr_err *err);
int remux_stitch_end(struct remux_stitcher **s, vr_err *err);
void remux_stitch_abort(struct remux_stitcher **s);

/* remux_stitch_end, asking `may` between the check and the rename: 1
 * publishes, 0 does not (its reason in err; the temporary file is removed
 * and whatever lies at the output's name is left alone: VR_ECANCELED), <0
 * an error (the same). The caller's fencing: a controller that lost its
 * claim of the job while it stitched must not replace another's output. */
typedef int (*remux_publish_fn)(void *ctx, vr_err *err);
int remux_stitch_end_if(struct remux_stitcher **s, remux_publish_fn may, void *ctx, vr_err *err);

/* The end publishes under pub (storage_commit_as: no replace, owner, mode),
 * which must outlive the stitcher or be given again before the end; NULL:
 * storage_commit. With pub the temporary file is made 0600 till then. */
struct storage_publish;
void remux_stitch_publish_as(struct remux_stitcher *s, const struct storage_publish *pub);

#endif
