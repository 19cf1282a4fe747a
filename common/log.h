/*
 * log.h - leveled logging to stderr, as text lines or JSON objects.
 *
 * Text lines look like "2026-11-24T18:17:00.123+01:00 vr-worker: warn: chunk 3:
 * retrying" (local time, to the ms). JSON (for log shippers: journald ->
 * Loki, Vector, Fluent Bit) is one object a line, every key always present:
 *   {"time":"2026-11-24T18:17:00.123+01:00","level":"warn","component":"vr-worker",
 *    "job":"j-...","chunk":3,"worker":"host:gpu0:1a2b3c4d","message":"..."}
 * with job, chunk and worker null where not known (see the context below).
 * The level comes from VR_LOG (error|warn|info|debug, default info) or
 * log_set_level(); the format from VR_LOG_FORMAT (text|json, default text)
 * or log_set_format() (the binaries' --log-format, common/cmdtable.c); the
 * component from log_init(). Thread-safe: each line is written with one fprintf.
 */
#ifndef VR_LOG_H
#define VR_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };
enum log_format { LOG_TEXT = 0, LOG_JSON };

/* Sets the program name shown in front of each line (the JSON "component")
 * and reads VR_LOG and VR_LOG_FORMAT. */
void log_init(const char *prog);
void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);

/* "text" or "json"; returns -1 (format unchanged) for anything else. */
int log_set_format(const char *name);
enum log_format log_get_format(void);

void log_msg(enum log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A message for the person at the terminal, such as "vrctl: no job 'x'\n":
 * written as is in text (no stamp, the caller's newline), a log object of
 * level lvl without its trailing newline in JSON. */
void log_say(enum log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/* ---- context: the JSON fields job, chunk and worker ----
 * Strings are copied (truncated to 127 bytes). A job of NULL clears it; a
 * chunk < 0 is unknown. The process's job and chunk suit a worker, whose
 * threads (pipeline, heartbeat, libav's) all work on its one chunk; a
 * thread's own, when set, wins over them and suits a controller's loop,
 * which handles one job at a time beside threads that do not. */
void log_ctx_worker(const char *name);
void log_ctx_process(const char *job, int chunk);
void log_ctx_thread(const char *job, int chunk);

/* Groups: several workers in one process (`serve --slot-mode threads`)
 * each keep a context of their own, which their threads join
 * (log_ctx_use; NULL: the process's). log_ctx_worker and log_ctx_process
 * set the calling thread's group's, or the process's; a group's thread's
 * text lines name its worker. log_ctx_current: the calling thread's
 * group, for the threads it starts to join. A group is freed after its
 * threads ended. */
struct log_ctx;
struct log_ctx *log_ctx_new(void);
void log_ctx_free(struct log_ctx *c);
void log_ctx_use(struct log_ctx *c);
struct log_ctx *log_ctx_current(void);

#ifdef __cplusplus
}
#endif

#endif
