/*
 * util-video.h - what the video and pipeline tests read back from a file
 * with plain libavformat / libavcodec (not through vio_*, so the code under
 * test does not check itself): every video frame's pts, the matte's luma,
 * and every packet of the other streams.
 */
#ifndef VR_T_VIDEO_UTIL_H
#define VR_T_VIDEO_UTIL_H

#include <libavutil/rational.h>
#include <stddef.h>
#include <stdint.h>

#define TV_MAX_FRAMES 256
#define TV_MAX_PKTS 1024

struct tv_pkt {
    int stream_type;    /* AVMEDIA_TYPE_* */
    int64_t pts;
    AVRational tb;
    int size;
    uint8_t *data;      /* malloc'd copy */
};

struct tv_file {
    int w, h, nframes;
    AVRational tb;                /* video stream */
    int64_t pts[TV_MAX_FRAMES];   /* decoded frames, in output order */
    uint8_t *luma[TV_MAX_FRAMES]; /* w*h each, when asked for */
    int npkts;                    /* non-video packets */
    struct tv_pkt pkts[TV_MAX_PKTS];
};

/* Reads `path`; keep_luma keeps every frame's Y plane. 0 or -1. */
int tv_read(const char *path, int keep_luma, struct tv_file *f);
void tv_free(struct tv_file *f);

/* The frames of a and b have the same count and the same times (exact
 * rational comparison); the non-video packets have equal bytes and times. */
void tv_assert_same_timing(const struct tv_file *a, const struct tv_file *b);
void tv_assert_same_packets(const struct tv_file *a, const struct tv_file *b);

/* Mean of the w x h luma inside the boxes and outside all of them; boxes are
 * {x0, y0, x1, y1} in 320x240 coordinates, scaled to the frame. */
void tv_box_means(const struct tv_file *f, int frame, const int (*boxes)[4], int nboxes,
                  double *in, double *out);

/* Copies src to dst, keeping `fraction` of its bytes; with corrupt != 0,
 * overwrites a run of bytes in the middle with a pattern instead. */
int tv_damage(const char *src, const char *dst, double fraction, int corrupt);

/* Copies src to dst with the bytes of video packet `n` (0-based, in file
 * order) flipped past its first 8 (the NAL's length and header kept): one
 * damaged packet in a file that is otherwise whole. 0 or -1. */
int tv_damage_packet(const char *src, const char *dst, int n);

/* A fresh directory under /tmp (caller removes it with tv_rmdir). */
void tv_tmpdir(char *buf, size_t n);
void tv_rmdir(const char *dir);
int tv_count_entries(const char *dir);

/* Test data path: $VR_DATA_DIR/rel (or rel). */
void tv_data(char *buf, size_t n, const char *rel);

#endif
