/*
 * rq_bounds.h - caps on what a worker's user may make Redis hold (issue 41,
 * finding 8). Each argument is bounded by Redis (proto-max-bulk-len 1mb,
 * README "Security"); the number of reports is bounded here.
 */
#ifndef VR_RQ_BOUNDS_H
#define VR_RQ_BOUNDS_H

#include "rq.h"

/* vr:reports holds at most this many entries: a live controller reads a
 * report in milliseconds, so only a flood (or every controller down for
 * minutes) reaches it; what is dropped is the oldest. */
#define RQ_REPORTS_MAXLEN 5000

/* A done report's metrics JSON is at most this long (a chunk's stage
 * histograms take a few KB). */
#define RQ_REPORT_METRICS_MAX (64 * 1024)

/* Trims vr:reports to RQ_REPORTS_MAXLEN entries. Returns the entries
 * dropped, or <0. */
long long rq_reports_cap(struct rq *q, vr_err *err);

#endif
