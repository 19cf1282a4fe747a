/*
 * tiles.c - tile planning (see tiles.h) and the layout names. Pure
 * arithmetic on the frame and model sizes; the engine calls it once per
 * seg_create().
 */
#include "tiles.h"

#include <math.h>
#include <string.h>

/* ---- eyes ---- */

/* Splits a w x h rectangle per layout into n eyes (odd sizes: the second eye
 * takes the extra row or column, so the eyes tile the frame exactly). */
static int split_eyes(enum seg_layout layout, int w, int h, struct frame_rect *e)
{
    switch (layout) {
    case SEG_LAYOUT_SBS:
        e[0] = (struct frame_rect){ 0, 0, w / 2, h };
        e[1] = (struct frame_rect){ w / 2, 0, w - w / 2, h };
        return 2;
    case SEG_LAYOUT_TB:
        e[0] = (struct frame_rect){ 0, 0, w, h / 2 };
        e[1] = (struct frame_rect){ 0, h / 2, w, h - h / 2 };
        return 2;
    default:
        e[0] = (struct frame_rect){ 0, 0, w, h };
        return 1;
    }
}

/* ---- one eye ---- */

/* Positions of `n` tiles of length t spread evenly over [0, len): the first
 * at 0, the last ending at len. */
static void spread(int n, int t, int len, int *pos)
{
    if (n == 1) {
        pos[0] = (len - t) / 2;
        return;
    }
    for (int i = 0; i < n; i++)
        pos[i] = (int)lround((double)i * (len - t) / (n - 1));
}

/* Tile width (eye px) of an n-column (m-row) grid covering w x h at overlap
 * ov with the model's aspect: the smallest whose grid covers the eye. The
 * plan clamps it to the eye, which distorts only when the grid asks for a
 * tile wider (taller) than the eye itself. */
static double grid_tile_w(int n, int m, double ov, int w, int h, double aspect)
{
    double need_w = w / (n - (n - 1) * ov), need_h = h / (m - (m - 1) * ov);
    return need_w > need_h * aspect ? need_w : need_h * aspect;
}

/* The overlap n tiles of length t need to cover len, at the least 0. */
static double grid_overlap(int n, double t, int len)
{
    return n > 1 && n * t > len ? (n * t - len) / ((n - 1) * t) : 0.0;
}

void tile_grid_pick(const struct vr_config *cfg, int eye_w, int eye_h, int mw, int mh,
                    struct tile_grid *g)
{
    int cols = cfg->tile_cols, rows = cfg->tile_rows;
    double ov = cfg->tile_overlap, aspect = (double)mw / mh, tw = 0.0;
    double tmin = cfg->tile_min * mw; /* the smallest tile's width, eye px */
    g->grown = 0;
    /* The largest grid up to the profile's whose tiles are at least tmin
     * wide: at its overlap, or grown: a small eye gets fewer tiles, a large
     * one all of them. */
    while (cols > 1 || rows > 1) {
        tw = grid_tile_w(cols, rows, ov, eye_w, eye_h, aspect);
        if (tw >= tmin)
            break;
        /* Too small: the tiles grow to tmin, sharing more of each other (up
         * to TILE_GROWN_OVERLAP), rather than fall to a coarser grid or out,
         * leaving the whole pass alone, which misses small people. */
        if (tmin <= eye_w && tmin / aspect <= eye_h
            && grid_overlap(cols, tmin, eye_w) <= TILE_GROWN_OVERLAP
            && grid_overlap(rows, tmin / aspect, eye_h) <= TILE_GROWN_OVERLAP) {
            tw = tmin;
            g->grown = 1;
            break;
        }
        cols -= cols > 1;
        rows -= rows > 1;
    }
    /* a 1x1 grid is the whole pass: none */
    if (cols <= 1 && rows <= 1)
        cols = rows = 0, tw = 0.0;
    g->cols = cols;
    g->rows = rows;
    g->tile_w = tw;
}

/* What every tile of an eye's grid shares. */
struct tile_grid_at {
    struct frame_rect eye;  /* frame pixels */
    int iw, ih;             /* a tile, eye pixels */
    double sx, sy;          /* eye to work pixels */
    double ov;              /* the feather */
    int favor;              /* cfg.tile_favor */
    float favor_floor;      /* cfg.tile_favor_floor */
    int sure;               /* FRAME_TILE_SURE: the fine grid's, a vote only where sure */
};

/* Appends the tile at (x, y) of the eye: its interior edges feathered. */
static void add_tile(struct tile_eye *te, const struct tile_grid_at *g, int x, int y)
{
    const struct frame_rect E = g->eye;
    int edges = 0;
    if (x > 0)
        edges |= FRAME_EDGE_L;
    if (x + g->iw < E.w)
        edges |= FRAME_EDGE_R;
    if (y > 0)
        edges |= FRAME_EDGE_T;
    if (y + g->ih < E.h)
        edges |= FRAME_EDGE_B;
    edges |= g->sure;
    te->src[te->n] = (struct frame_rect){ E.x + x, E.y + y, g->iw, g->ih };
    te->dst[te->n] = (struct frame_tile){
        .x = (float)(x * g->sx), .y = (float)(y * g->sy),
        .w = (float)(g->iw * g->sx), .h = (float)(g->ih * g->sy),
        .weight = 1.0f,
        /* ramp across the shared band; a hairline when tiles only abut */
        .feather = g->ov > 0.02 ? (float)g->ov : 0.02f,
        .edges = edges,
        .favor = g->favor,
        .favor_floor = g->favor_floor,
    };
    te->n++;
}

static void plan_eye(const struct vr_config *cfg, int mw, int mh, struct tile_eye *te)
{
    const struct frame_rect E = te->eye;
    double scale = (double)cfg->work_size / (E.w > E.h ? E.w : E.h);
    if (scale > 1.0)
        scale = 1.0; /* the work mask is never finer than the eye */
    te->work_w = (int)lround(E.w * scale);
    te->work_h = (int)lround(E.h * scale);
    if (te->work_w < 1)
        te->work_w = 1;
    if (te->work_h < 1)
        te->work_h = 1;
    double sx = (double)te->work_w / E.w, sy = (double)te->work_h / E.h;

    te->n = 0;
    struct tile_grid g;
    tile_grid_pick(cfg, E.w, E.h, mw, mh, &g);
    int cols = g.cols, rows = g.rows;
    double ov = cfg->tile_overlap, aspect = (double)mw / mh, tw = g.tile_w;
    if (cols > 0 && rows > 0) {
        double th = tw / aspect;
        int iw = (int)ceil(tw), ih = (int)ceil(th);
        if (iw > E.w)
            iw = E.w;
        if (ih > E.h)
            ih = E.h;
        if (g.grown) { /* feather across the whole shared band, as at tile_overlap */
            double ox = grid_overlap(cols, iw, E.w), oy = grid_overlap(rows, ih, E.h);
            ov = cols > 1 && rows > 1 ? fmin(ox, oy) : fmax(ox, oy);
        }
        int xs[TILE_MAX_GRID], ys[TILE_MAX_GRID];
        spread(cols, iw, E.w, xs);
        spread(rows, ih, E.h, ys);
        struct tile_grid_at at = { E, iw, ih, sx, sy, ov, cfg->tile_favor,
                                   (float)cfg->tile_favor_floor, 0 };
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                add_tile(te, &at, xs[c], ys[r]);
        /* The staggered grid: a tile centred on each inner crossing, half
         * way between its four neighbours, sees whole whom their borders cut. */
        if (cfg->tile_stagger)
            for (int r = 0; r + 1 < rows; r++)
                for (int c = 0; c + 1 < cols; c++)
                    add_tile(te, &at, (xs[c] + xs[c + 1]) / 2, (ys[r] + ys[r + 1]) / 2);
        /* The fine grid: one tile more a side, so smaller tiles, each
         * person larger in the model's input. The selfie models miss a
         * person under about half their input's height (made's middle
         * photo: 129 of 256 px in every tile of the 3x3, found at 145);
         * not held to tile_min, which guards the grid, not this scale. */
        const int fc = cols + 1, fr = rows + 1;
        if (cfg->tile_fine && fc <= TILE_MAX_GRID && fr <= TILE_MAX_GRID
            && te->n + fc * fr + 1 <= TILE_MAX_PER_EYE) {
            const double ftw = grid_tile_w(fc, fr, cfg->tile_overlap, E.w, E.h, aspect);
            struct tile_grid_at fa = at;
            /* grey from a smaller view is the tile's doubt (a doorway, a
             * tripod), and it drifts: it neither votes nor weighs */
            fa.sure = FRAME_TILE_SURE;
            fa.iw = (int)ceil(ftw), fa.ih = (int)ceil(ftw / aspect);
            fa.iw = fa.iw > E.w ? E.w : fa.iw < 1 ? 1 : fa.iw;
            fa.ih = fa.ih > E.h ? E.h : fa.ih < 1 ? 1 : fa.ih;
            fa.ov = cfg->tile_overlap;
            int fx[TILE_MAX_GRID], fy[TILE_MAX_GRID];
            spread(fc, fa.iw, E.w, fx);
            spread(fr, fa.ih, E.h, fy);
            for (int r = 0; r < fr; r++)
                for (int c = 0; c < fc; c++)
                    add_tile(te, &fa, fx[c], fy[r]);
        }
    }
    if (cfg->whole_pass || te->n == 0) {
        te->src[te->n] = E;
        te->dst[te->n] = (struct frame_tile){
            .x = 0.0f, .y = 0.0f, .w = (float)te->work_w, .h = (float)te->work_h,
            .weight = 1.0f, .feather = 0.0f, .edges = te->n ? FRAME_TILE_FLOOR : 0,
        };
        te->n++;
    }
}

/* ---- plan ---- */

int tile_plan_make(const struct vr_config *cfg, enum seg_layout layout,
                   int in_w, int in_h, int out_w, int out_h, int mw, int mh,
                   struct tile_plan *p, vr_err *err)
{
    memset(p, 0, sizeof *p);
    if (cfg->tile_cols > TILE_MAX_GRID || cfg->tile_rows > TILE_MAX_GRID)
        return vr_err_set(err, VR_EINVAL, "tile grid %dx%d: at most %dx%d",
                          cfg->tile_cols, cfg->tile_rows, TILE_MAX_GRID, TILE_MAX_GRID);
    if ((cfg->tile_cols > 0) != (cfg->tile_rows > 0))
        return vr_err_set(err, VR_EINVAL, "tile grid %dx%d: both or neither must be 0",
                          cfg->tile_cols, cfg->tile_rows);
    if (mw < 1 || mh < 1)
        return vr_err_set(err, VR_EINVAL, "model input %dx%d", mw, mh);
    int min_w = layout == SEG_LAYOUT_SBS ? 4 : 2, min_h = layout == SEG_LAYOUT_TB ? 4 : 2;
    if (in_w < min_w || in_h < min_h || out_w < min_w || out_h < min_h)
        return vr_err_set(err, VR_EINVAL, "frame %dx%d (mask %dx%d) too small for layout %s",
                          in_w, in_h, out_w, out_h, seg_layout_name(layout));

    struct frame_rect eyes[2], outs[2];
    p->n_eyes = split_eyes(layout, in_w, in_h, eyes);
    split_eyes(layout, out_w, out_h, outs);
    for (int i = 0; i < p->n_eyes; i++) {
        p->eye[i].eye = eyes[i];
        p->eye[i].out = outs[i];
        plan_eye(cfg, mw, mh, &p->eye[i]);
        if (p->eye[i].n > p->max_tiles)
            p->max_tiles = p->eye[i].n;
    }
    return 0;
}

/* ---- layout names ---- */

static const char *const layout_names[] = { "mono", "sbs", "tb" };

int seg_layout_parse(const char *s)
{
    for (int i = 0; s && i < 3; i++)
        if (strcmp(s, layout_names[i]) == 0)
            return i;
    return -1;
}

const char *seg_layout_name(enum seg_layout l)
{
    return (unsigned)l < 3 ? layout_names[l] : "?";
}
