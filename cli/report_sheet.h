/*
 * report_sheet.h - the contact sheet of `vrctl report` (issue 39): a few
 * frames of the job's source beside the same frames of its output (and,
 * for a matte, the matte over the source), one
 * PNG, embedded in the page as a data: URI (the page stays one file that
 * loads nothing).
 */
#ifndef VR_REPORT_SHEET_H
#define VR_REPORT_SHEET_H

#include "vr_err.h"

#include <stdio.h>

#define REPORT_SHEET_ROWS 4   /* frames shown: 0, 10, 20, 30 */
#define REPORT_SHEET_STEP 10
#define REPORT_SHEET_CELL 320 /* a cell's width at most, px */

/* Writes to f an <img> of the sheet of `src` (the job's input) and `out`
 * (its output), both paths from Redis: each must be an absolute path to a
 * regular file (no URL, FIFO or device; a FIFO would hang the decoder).
 * `matte`: the output is a matte (output kind "mask"), and a third column
 * shows it over the source (the background dimmed and tinted red).
 * Returns 0, or VR_E* with why (nothing written to f then). */
int report_sheet_html(FILE *f, const char *src, const char *out, int matte, vr_err *err);

#endif
