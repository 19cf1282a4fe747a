/*
 * h264enc.c - the matte encoder's driver (h264enc.h): the parameter sets,
 * the slice header, the stages of h264_ref.h in order, the NAL units.
 *
 * On the CPU the stages are the C twins; the CUDA encoder runs the same
 * stages as kernels and leaves only the NAL escaping here.
 */
#include "h264enc.h"

#include "h264_bits.h"
#include "h264_ref.h"
#include "h264_slice_impl.h"
#include "h264enc_gpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* frame_num is coded in this many bits (log2_max_frame_num) */
enum { FRAME_NUM_BITS = 16 };

struct h264enc {
    struct h264enc_opts o;
    int mbw, mbh, ls;
    uint8_t *src;            /* padded source luma */
    uint8_t *rec[2];         /* reconstructions: this frame and the reference */
    int cur;                 /* rec[cur] is the last frame's */
    struct h264_mb *mb;
    uint32_t *run, *nbits;
    uint64_t *pos;
    uint64_t *sbyte;         /* [slices + 1]: each slice's first byte in rbsp */
    uint8_t *bits;           /* per-MB codewords */
    uint8_t *rbsp;           /* the slices before escaping, each from a byte */
    size_t rbsp_cap;
    uint32_t counts[3];      /* this frame's MBs by type */
    uint8_t *au;             /* the access unit */
    size_t au_cap;
    uint8_t hdr[128];
    int hdr_len;
    int slices;              /* slices a frame (h264_slice_impl.h) */
    long long since_idr;     /* frames since the last IDR; -1 before the first */
    int idr_id, last_idr;    /* idr_pic_id; whether the last frame was an IDR */
    struct h264enc_stats st;
    struct h264_gpu *gpu;    /* the GPU backend, or NULL */
    /* h264enc_queue on the GPU: the frame queued and not collected yet
     * (its slice headers' fields fixed when it was queued) */
    int pend;
    struct {
        struct fhdr {
            int idr;
            uint32_t frame_num;
            int idr_id;
        } h;
        int64_t tag;
    } q;
};

/* ---- level (Table A-1) ---- */

int h264enc_level(int w, int h, double fps)
{
    static const struct { int idc; long mbps, fs; } L[] = {
        { 10, 1485, 99 },        { 11, 3000, 396 },       { 12, 6000, 396 },
        { 13, 11880, 396 },      { 20, 11880, 396 },      { 21, 19800, 792 },
        { 22, 20250, 1620 },     { 30, 40500, 1620 },     { 31, 108000, 3600 },
        { 32, 216000, 5120 },    { 40, 245760, 8192 },    { 42, 522240, 8704 },
        { 50, 589824, 22080 },   { 51, 983040, 36864 },   { 52, 2073600, 36864 },
        { 60, 4177920, 139264 }, { 61, 8355840, 139264 }, { 62, 16711680, 139264 },
    };
    long mw = (w + 15) / 16, mh = (h + 15) / 16, fs = mw * mh;
    double mbps = (double)fs * (fps > 0 ? fps : 60);
    for (size_t i = 0; i < sizeof L / sizeof L[0]; i++) {
        /* a side may not exceed sqrt(8 * MaxFS) MBs (A.3.1) */
        if (fs <= L[i].fs && mbps <= (double)L[i].mbps && mw * mw <= 8 * L[i].fs &&
            mh * mh <= 8 * L[i].fs)
            return L[i].idc;
    }
    return 62;
}

/* ---- NAL units ---- */

/* A NAL unit with its 4-byte start code: header byte, then the RBSP with
 * emulation prevention (00 00 0x, x <= 3, becomes 00 00 03 0x). dst has
 * room for 5 + 3 * len / 2 bytes. Returns the bytes written. */
static size_t nal_write(uint8_t *dst, int ref_idc, int type, const uint8_t *rbsp, size_t len)
{
    size_t o = 0;
    dst[o++] = 0;
    dst[o++] = 0;
    dst[o++] = 0;
    dst[o++] = 1;
    dst[o++] = (uint8_t)(ref_idc << 5 | type);
    /* An 03 goes before byte j + 2 after a pair of zeros at j, j + 1; the
     * count restarts after it. A nonzero byte at j + 1 rules out pairs at
     * j and j + 1, so the scan steps two bytes (a coded slice has zero
     * bytes, but seldom two in a row), and the runs between escapes are
     * copied whole. */
    size_t start = 0, j = 0;
    while (j + 2 < len) {
        if (rbsp[j + 1]) {
            j += 2;
            continue;
        }
        if (!rbsp[j] && rbsp[j + 2] <= 3) {
            memcpy(dst + o, rbsp + start, j + 2 - start);
            o += j + 2 - start;
            dst[o++] = 3;
            start = j += 2;
            continue;
        }
        j++;
    }
    memcpy(dst + o, rbsp + start, len - start);
    o += len - start;
    return o;
}

static void trailing_bits(struct h264_bw *w)
{
    h264_put(w, 1, 1);
    while (w->bit & 7)
        h264_put(w, 0, 1);
}

static void write_headers(struct h264enc *e)
{
    uint8_t b[64];
    struct h264_bw w = { b, sizeof b, 0, 0, 0, 0, 0 };
    double fps = e->o.fps_num > 0 && e->o.fps_den > 0 ? (double)e->o.fps_num / e->o.fps_den : 60;
    /* SPS */
    h264_put(&w, 66, 8);   /* profile_idc: Baseline */
    h264_put(&w, 0xC0, 8); /* constraint_set0 and 1: Constrained Baseline */
    h264_put(&w, (uint32_t)h264enc_level(e->o.w, e->o.h, fps), 8);
    h264_ue(&w, 0);                  /* seq_parameter_set_id */
    h264_ue(&w, FRAME_NUM_BITS - 4); /* log2_max_frame_num_minus4 */
    h264_ue(&w, 2);                  /* pic_order_cnt_type 2: order = decoding order */
    h264_ue(&w, 1);                  /* max_num_ref_frames */
    h264_put(&w, 0, 1);              /* gaps_in_frame_num_value_allowed_flag */
    h264_ue(&w, (uint32_t)e->mbw - 1);
    h264_ue(&w, (uint32_t)e->mbh - 1);
    h264_put(&w, 1, 1); /* frame_mbs_only_flag */
    h264_put(&w, 1, 1); /* direct_8x8_inference_flag */
    int cr = (e->mbw * 16 - e->o.w) / 2, cb = (e->mbh * 16 - e->o.h) / 2;
    h264_put(&w, cr || cb, 1); /* frame_cropping_flag, in 2-pixel units (4:2:0) */
    if (cr || cb) {
        h264_ue(&w, 0);
        h264_ue(&w, (uint32_t)cr);
        h264_ue(&w, 0);
        h264_ue(&w, (uint32_t)cb);
    }
    h264_put(&w, 1, 1); /* vui_parameters_present_flag */
    h264_put(&w, 0, 1); /* aspect_ratio_info_present_flag */
    h264_put(&w, 0, 1); /* overscan_info_present_flag */
    h264_put(&w, 1, 1); /* video_signal_type_present_flag */
    h264_put(&w, 5, 3); /* video_format: unspecified */
    h264_put(&w, e->o.full_range ? 1u : 0u, 1);
    h264_put(&w, 1, 1);          /* colour_description_present_flag */
    h264_put(&w, 0x010101, 24);  /* BT.709 primaries, transfer, matrix */
    h264_put(&w, 0, 1);          /* chroma_loc_info_present_flag */
    h264_put(&w, 0, 1);          /* timing_info_present_flag: the container has it */
    h264_put(&w, 0, 1);          /* nal_hrd_parameters_present_flag */
    h264_put(&w, 0, 1);          /* vcl_hrd_parameters_present_flag */
    h264_put(&w, 0, 1);          /* pic_struct_present_flag */
    h264_put(&w, 1, 1);          /* bitstream_restriction_flag: no reordering */
    h264_put(&w, 1, 1);          /* motion_vectors_over_pic_boundaries_flag */
    h264_ue(&w, 0);              /* max_bytes_per_pic_denom */
    h264_ue(&w, 0);              /* max_bits_per_mb_denom */
    /* log2_max_mv_length_horizontal, _vertical: |v| <= 2^7 - 1 quarter pixels
     * (a search vector is at most H264_SEARCH = 16 pixels, and so a median) */
    h264_ue(&w, 7);
    h264_ue(&w, 7);
    h264_ue(&w, 0);              /* max_num_reorder_frames */
    h264_ue(&w, 1);              /* max_dec_frame_buffering */
    trailing_bits(&w);
    size_t n = nal_write(e->hdr, 3, 7, b, w.bit / 8);
    /* PPS */
    w = (struct h264_bw){ b, sizeof b, 0, 0, 0, 0, 0 };
    h264_ue(&w, 0);              /* pic_parameter_set_id */
    h264_ue(&w, 0);              /* seq_parameter_set_id */
    h264_put(&w, 0, 1);          /* entropy_coding_mode_flag: CAVLC */
    h264_put(&w, 0, 1);          /* bottom_field_pic_order_in_frame_present_flag */
    h264_ue(&w, 0);              /* num_slice_groups_minus1 */
    h264_ue(&w, 0);              /* num_ref_idx_l0_default_active_minus1 */
    h264_ue(&w, 0);              /* num_ref_idx_l1_default_active_minus1 */
    h264_put(&w, 0, 1);          /* weighted_pred_flag */
    h264_put(&w, 0, 2);          /* weighted_bipred_idc */
    h264_se(&w, e->o.qp - 26);   /* pic_init_qp_minus26: the fixed QP */
    h264_se(&w, 0);              /* pic_init_qs_minus26 */
    h264_se(&w, 0);              /* chroma_qp_index_offset */
    h264_put(&w, 1, 1);          /* deblocking_filter_control_present_flag */
    h264_put(&w, 0, 1);          /* constrained_intra_pred_flag */
    h264_put(&w, 0, 1);          /* redundant_pic_cnt_present_flag */
    trailing_bits(&w);
    n += nal_write(e->hdr + n, 3, 8, b, w.bit / 8);
    e->hdr_len = (int)n;
}

/* ---- life ---- */

/* On since the eleventh pass (docs/PERF.md): with Intra 16x16 in P frames
 * the smooth 4096x2048 matte takes 1.25x x264 ultrafast's bytes at +1.6 dB
 * (4.6x at -0.76 dB without), and k_intra_cands brought the stage from
 * 0.70 to 0.25 ms a P frame on an H200. VR_H264_INTRA_P=0 turns it off. */
enum { INTRA_P_BUILTIN = 1 };

int h264enc_intra_p_default(void)
{
    const char *v = getenv("VR_H264_INTRA_P");
    if (v && (!strcmp(v, "0") || !strcmp(v, "1")))
        return v[0] == '1';
    return INTRA_P_BUILTIN;
}

/* The default slices: with intra_p on, one each SLICE_ROWS MB rows
 * (rows / SLICE_ROWS, at least 1), so that the intra wavefront of a P
 * frame runs a band at a time, the bands side by side; with it off, one
 * (no P wavefront to shorten: slices would only cost bytes). On the smooth
 * 4096x2048 matte 4 slices cost 3.2% bytes, 8 cost 6.0%, 16 11.9%, and
 * on the H200 they took intra-in-P from 921 to 986, 1068, 1089 fps
 * (docs/notes/h264.md, "Slices"). */
enum { SLICE_ROWS = 32 };

int h264enc_slices_default(int h, int intra_p)
{
    int rows = (h + 15) / 16, s = rows / SLICE_ROWS;
    return intra_p && s > 1 ? s : 1;
}

int h264enc_new(const struct h264enc_opts *o, struct h264enc **out, vr_err *err)
{
    *out = NULL;
    if (o->w < 16 || o->h < 16 || o->w > H264ENC_MAX_DIM || o->h > H264ENC_MAX_DIM ||
        (o->w & 1) || (o->h & 1))
        return vr_err_set(err, VR_EINVAL, "matte encoder: frame size %dx%d: each side must be "
                          "even and 16..%d", o->w, o->h, H264ENC_MAX_DIM);
    if (o->qp < 0 || o->qp > 51)
        return vr_err_set(err, VR_EINVAL, "matte encoder: QP %d is outside 0..51", o->qp);
    if (o->slices < 0 || o->slices > (o->h + 15) / 16)
        return vr_err_set(err, VR_EINVAL, "matte encoder: %d slices: 1..%d (the MB rows), or 0 "
                          "for the default", o->slices, (o->h + 15) / 16);
    struct h264enc *e = calloc(1, sizeof *e);
    if (!e)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    e->o = *o;
    e->o.intra_p = o->intra_p ? o->intra_p > 0 : h264enc_intra_p_default();
    e->mbw = (o->w + 15) / 16;
    e->mbh = (o->h + 15) / 16;
    e->ls = e->mbw * 16;
    e->slices = o->slices ? o->slices : h264enc_slices_default(o->h, e->o.intra_p);
    size_t n = (size_t)e->mbw * e->mbh, plane = n * 256;
    e->src = malloc(plane);
    e->rec[0] = malloc(plane);
    e->rec[1] = malloc(plane);
    e->mb = calloc(n, sizeof *e->mb);
    e->run = calloc(n + 1, sizeof *e->run);
    e->nbits = calloc(n, sizeof *e->nbits);
    e->pos = calloc(n + 1, sizeof *e->pos);
    e->sbyte = calloc((size_t)e->slices + 1, sizeof *e->sbyte);
    e->bits = malloc(n * H264_MB_MAX_BYTES);
    e->rbsp_cap = h264_rbsp_cap(e->mbw, e->mbh, e->slices);
    e->rbsp = malloc(e->rbsp_cap);
    e->au_cap = 5 * (size_t)e->slices + e->rbsp_cap * 3 / 2;
    e->au = malloc(e->au_cap);
    if (!e->src || !e->rec[0] || !e->rec[1] || !e->mb || !e->run || !e->nbits || !e->pos ||
        !e->sbyte || !e->bits || !e->rbsp || !e->au) {
        h264enc_free(&e);
        return vr_err_set(err, VR_ENOMEM, "matte encoder: out of memory for %dx%d", o->w, o->h);
    }
    e->since_idr = -1;
    e->idr_id = 1;
    write_headers(e);
    int rc;
    if (o->use_gpu && (rc = h264_gpu_new(o->gpu, o->w, o->h, e->mbw, e->mbh, e->o.intra_p,
                                         e->slices, &e->gpu, err)) < 0) {
        h264enc_free(&e);
        return rc;
    }
    *out = e;
    return 0;
}

void h264enc_free(struct h264enc **ep)
{
    struct h264enc *e = ep ? *ep : NULL;
    if (!e)
        return;
    free(e->src);
    free(e->rec[0]);
    free(e->rec[1]);
    free(e->mb);
    free(e->run);
    free(e->nbits);
    free(e->pos);
    free(e->sbyte);
    free(e->bits);
    free(e->rbsp);
    free(e->au);
    h264_gpu_free(&e->gpu);
    free(e);
    *ep = NULL;
}

const uint8_t *h264enc_headers(const struct h264enc *e, int *size)
{
    *size = e->hdr_len;
    return e->hdr;
}

const uint8_t *h264enc_recon(struct h264enc *e, int *ls)
{
    *ls = e->ls;
    if (e->gpu && h264_gpu_recon(e->gpu, e->rec[e->cur], NULL) < 0)
        return NULL;
    return e->rec[e->cur];
}

void h264enc_stats(const struct h264enc *e, struct h264enc_stats *s)
{
    *s = e->st;
    s->graph_frames = e->gpu ? h264_gpu_graph_frames(e->gpu) : 0;
}

int h264enc_on_gpu(const struct h264enc *e) { return e->gpu != NULL; }

int h264enc_cuda_built(void)
{
#ifdef VR_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

/* ---- a frame ---- */

/* An IDR's QP: 3 below the P frames', as x264 codes its I frames at a
 * constant QP (ipratio 1.4: 6 log2 1.4 = 2.91, rounded), the matte's rule
 * before this encoder. The IDR is the reference its GOP's skipped MBs copy,
 * so its error is the GOP's. */
int h264enc_idr_qp(int qp)
{
    return qp > 3 ? qp - 3 : 0;
}

/* A slice header (7.3.3) of the frame h, its first MB first_mb. */
static void slice_header(const struct h264enc *e, struct h264_bw *w, const struct fhdr *h,
                         uint32_t first_mb)
{
    h264_ue(w, first_mb);        /* first_mb_in_slice */
    h264_ue(w, h->idr ? 7 : 5);  /* slice_type: I or P, every slice of the picture */
    h264_ue(w, 0);               /* pic_parameter_set_id */
    h264_put(w, h->frame_num, FRAME_NUM_BITS);
    if (h->idr) {
        h264_ue(w, (uint32_t)h->idr_id); /* differs between back-to-back IDRs */
    } else {
        h264_put(w, 0, 1);    /* num_ref_idx_active_override_flag */
        h264_put(w, 0, 1);    /* ref_pic_list_modification_flag_l0 */
    }
    if (h->idr) {             /* dec_ref_pic_marking */
        h264_put(w, 0, 1);    /* no_output_of_prior_pics_flag */
        h264_put(w, 0, 1);    /* long_term_reference_flag */
    } else {
        h264_put(w, 0, 1);    /* adaptive_ref_pic_marking_mode_flag: sliding window */
    }
    h264_se(w, h->idr ? h264enc_idr_qp(e->o.qp) - e->o.qp : 0); /* slice_qp_delta */
    h264_ue(w, 1);            /* disable_deblocking_filter_idc: off */
}

/* The bits of h's slice headers less first_mb_in_slice's (the same in
 * every slice of the frame): struct h264_frame's hdr_bits. */
static uint32_t header_bits(const struct h264enc *e, const struct fhdr *h)
{
    uint8_t b[32];
    struct h264_bw w = { b, sizeof b, 0, 0, 0, 0, 0 };
    slice_header(e, &w, h, 0);
    return w.bit - 1; /* ue(0) is one bit */
}

/* The frame's stages on the CPU (the twins): the slices packed into
 * e->rbsp, each from its byte e->sbyte[k], its header's room left zero. */
static void frame_cpu(struct h264enc *e, const uint8_t *y, int ls, const struct fhdr *h, int qp)
{
    int nxt = !e->cur, idr = h->idr;
    struct h264_frame f = {
        .mbw = e->mbw, .mbh = e->mbh, .qp = qp, .src = e->src, .ref = e->rec[e->cur],
        .rec = e->rec[nxt], .ls = e->ls, .mb = e->mb, .run = e->run, .bits = e->bits,
        .nbits = e->nbits, .pos = e->pos, .counts = e->counts, .slices = e->slices,
        .hdr_bits = header_bits(e, h), .sbyte = e->sbyte,
    };
    ref_h264_load(&f, y, ls, e->o.w, e->o.h);
    if (idr)
        for (int d = 0; d < e->mbw + e->mbh - 1; d++)
            ref_h264_intra(&f, d);
    else {
        ref_h264_search(&f);
        ref_h264_inter(&f);
        if (e->o.intra_p) {
            ref_h264_intra_p(&f);
            ref_h264_pfix(&f);
        }
    }
    ref_h264_skipruns(&f);
    ref_h264_cavlc(&f, idr);
    ref_h264_scan(&f);
    ref_h264_slices(&f, idr);
    ref_h264_clear(&f, e->rbsp, 1);
    ref_h264_pack(&f, e->rbsp, idr);
}

/* The frame's IDR decision and slice header fields; the encoder's frame
 * count and idr_pic_id move on. */
static struct fhdr begin(struct h264enc *e, int *idr)
{
    *idr = *idr || e->since_idr < 0;
    e->since_idr = *idr ? 0 : e->since_idr + 1;
    e->idr_id = *idr ? (e->last_idr ? !e->idr_id : 0) : e->idr_id;
    e->last_idr = *idr;
    return (struct fhdr){ .idr = *idr,
                          .frame_num = (uint32_t)(e->since_idr & ((1 << FRAME_NUM_BITS) - 1)),
                          .idr_id = e->idr_id };
}

/* The packed slices in e->rbsp (e->sbyte): each slice's header OR-ed into
 * its first bytes (left zero for it), each slice escaped into its NAL unit
 * in e->au, the stats. */
static int finish(struct h264enc *e, const struct fhdr *h, const uint8_t **pkt, int *size,
                  int *key, vr_err *err)
{
    if (e->sbyte[e->slices] > e->rbsp_cap)
        return vr_err_set(err, VR_EINVAL, "matte encoder: frame of %llu bytes over its buffer",
                          (unsigned long long)e->sbyte[e->slices]);
    const struct h264_frame geo = { .mbw = e->mbw, .mbh = e->mbh, .slices = e->slices };
    size_t len = 0;
    for (int k = 0; k < e->slices; k++) {
        uint8_t b[32] = { 0 };
        struct h264_bw w = { b, sizeof b, 0, 0, 0, 0, 0 };
        slice_header(e, &w, h, (uint32_t)(slice_first_row(&geo, k) * e->mbw));
        uint8_t *s = e->rbsp + e->sbyte[k];
        for (uint32_t i = 0; i < (w.bit + 7) / 8; i++)
            s[i] |= b[i];
        len += nal_write(e->au + len, h->idr ? 3 : 2, h->idr ? 5 : 1, s,
                         (size_t)(e->sbyte[k + 1] - e->sbyte[k]));
    }

    e->st.mb_i16 += e->counts[H264_MB_I16];
    e->st.mb_p16 += e->counts[H264_MB_P16];
    e->st.mb_skip += e->counts[H264_MB_SKIP];
    if (h->idr)
        e->st.idr++;
    else
        e->st.p++;
    *pkt = e->au;
    *size = (int)len;
    *key = h->idr;
    return 0;
}

static int check_frame(struct h264enc *e, int ls, int y_dev, vr_err *err)
{
    if (ls < e->o.w)
        return vr_err_set(err, VR_EINVAL, "matte encoder: stride %d below the width %d", ls, e->o.w);
    if (y_dev && !e->gpu)
        return vr_err_set(err, VR_EINVAL, "matte encoder: a frame in device memory for an "
                          "encoder on the CPU");
    return 0;
}

static int frame(struct h264enc *e, const uint8_t *y, int ls, int y_dev, int idr,
                 const uint8_t **pkt, int *size, int *key, vr_err *err)
{
    int rc = check_frame(e, ls, y_dev, err);
    if (rc < 0)
        return rc;
    if (e->pend)
        return vr_err_set(err, VR_EINVAL, "matte encoder: a frame is queued: flush it first");
    struct fhdr h = begin(e, &idr);
    int qp = idr ? h264enc_idr_qp(e->o.qp) : e->o.qp;
    if (e->gpu) {
        rc = h264_gpu_frame(e->gpu, y, ls, y_dev, qp, idr, header_bits(e, &h), e->rbsp,
                            e->sbyte, e->counts, err);
        if (rc < 0) {
            e->since_idr = -1; /* the reference is lost: the next frame is an IDR */
            return rc;
        }
    } else {
        frame_cpu(e, y, ls, &h, qp);
    }
    e->cur = !e->cur;
    return finish(e, &h, pkt, size, key, err);
}

/* The queued frame's packet (h264enc_queue, h264enc_flush). */
static int collect(struct h264enc *e, const uint8_t **pkt, int *size, int *key, int64_t *tag,
                   vr_err *err)
{
    e->pend = 0;
    int rc = h264_gpu_collect(e->gpu, e->rbsp, e->sbyte, e->counts, err);
    if (rc < 0) {
        e->since_idr = -1;
        return rc;
    }
    *tag = e->q.tag;
    return finish(e, &e->q.h, pkt, size, key, err);
}

int h264enc_queue(struct h264enc *e, const uint8_t *y, int ls, int y_dev, int idr, int64_t tag,
                  const uint8_t **pkt, int *size, int *key, int64_t *tag_out, vr_err *err)
{
    *size = 0;
    int rc = check_frame(e, ls, y_dev, err);
    if (rc < 0)
        return rc;
    if (!e->gpu) { /* the CPU codes it now: its own packet */
        *tag_out = tag;
        return frame(e, y, ls, y_dev, idr, pkt, size, key, err);
    }
    /* the queued one's header fields stay in q until its collect */
    struct fhdr h = begin(e, &idr);
    int qp = idr ? h264enc_idr_qp(e->o.qp) : e->o.qp;
    rc = h264_gpu_queue(e->gpu, y, ls, y_dev, qp, idr, header_bits(e, &h), err);
    if (rc < 0) {
        e->since_idr = -1;
        return rc;
    }
    e->cur = !e->cur;
    if (e->pend)
        rc = collect(e, pkt, size, key, tag_out, err);
    e->q.h = h;
    e->q.tag = tag;
    e->pend = 1; /* a flush still collects it after a failed collect */
    return rc < 0 ? rc : 0;
}

int h264enc_flush(struct h264enc *e, const uint8_t **pkt, int *size, int *key, int64_t *tag_out,
                  vr_err *err)
{
    *size = 0;
    return e->pend ? collect(e, pkt, size, key, tag_out, err) : 0;
}

int h264enc_frame(struct h264enc *e, const uint8_t *y, int ls, int idr, const uint8_t **pkt,
                  int *size, int *key, vr_err *err)
{
    return frame(e, y, ls, 0, idr, pkt, size, key, err);
}

int h264enc_frame_dev(struct h264enc *e, const uint8_t *y, int ls, int idr, const uint8_t **pkt,
                      int *size, int *key, vr_err *err)
{
    return frame(e, y, ls, 1, idr, pkt, size, key, err);
}
