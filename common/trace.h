/*
 * trace.h - a Chrome trace (JSON "traceEvents", opens in Perfetto and
 * chrome://tracing) of the pipeline's stages, one row per thread, plus NVTX
 * ranges for Nsight Systems when built with CUDA.
 *
 * Events are kept in memory (bounded by TRACE_MAX_EVENTS; later ones are
 * counted and dropped) and written at trace_close(), so recording costs a
 * lock and a copy, no I/O on the hot path. Every function is thread-safe and
 * accepts a NULL trace (tracing off), so callers need no `if (trace)`.
 */
#ifndef VR_TRACE_H
#define VR_TRACE_H

#include "vr_err.h"

#include <stdint.h>

#define TRACE_MAX_EVENTS (4 << 20)

struct trace;

/* Starts a trace that trace_close() writes to `path`. Returns 0 or VR_E*. */
int trace_create(const char *path, struct trace **out, vr_err *err);

/* Microseconds on the monotonic clock, the time base of every event. */
double trace_now_us(void);

/* Names the calling thread's row ("decode", "segment", ...); `name` is copied. */
void trace_thread_name(struct trace *t, const char *name);

/* Records a complete event [ts_us, ts_us + dur_us) on the calling thread's
 * row. `name` must be static storage (a string literal); `frame` (>= 0) is
 * shown as an argument, -1 for none. */
void trace_span(struct trace *t, const char *name, double ts_us, double dur_us,
                int64_t frame);

/* Records a counter sample (a graph row in Perfetto), e.g. a queue depth. */
void trace_counter(struct trace *t, const char *name, double ts_us, double value);

/* NVTX range around a stage on the calling thread (no-op without CUDA). */
void trace_nvtx_push(const char *name);
void trace_nvtx_pop(void);

/* Writes the file (temp name + rename) and frees *t, clearing it; accepts
 * NULL. Returns 0 or VR_EIO naming the path. */
int trace_close(struct trace **t, vr_err *err);

/* Frees without writing; accepts NULL. */
void trace_free(struct trace **t);

#endif
