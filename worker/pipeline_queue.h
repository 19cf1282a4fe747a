/*
 * pipeline_queue.h - a bounded, blocking FIFO of pointers that joins two
 * pipeline stages: push blocks while full (back-pressure, so memory stays
 * bounded by the capacities), pop blocks while empty. close() marks the end
 * of the stream (pop drains what is left, then returns 0); abort() wakes
 * everybody and makes push and pop fail at once (an error elsewhere).
 */
#ifndef VR_PIPELINE_QUEUE_H
#define VR_PIPELINE_QUEUE_H

#include "vr_err.h"

struct pq;

/* A queue holding at most `cap` (>= 1) items. Returns 0 or VR_ENOMEM. */
int pq_create(int cap, struct pq **out, vr_err *err);

/* Appends `item` (ownership passes to the queue). Returns 1, or 0 when the
 * queue was aborted or closed (the caller still owns the item). */
int pq_push(struct pq *q, void *item);

/* Takes the oldest item into *item (ownership passes to the caller).
 * Returns 1, or 0 at the end (closed and empty, or aborted). */
int pq_pop(struct pq *q, void **item);

/* Like pq_pop but does not wait: returns 0 when nothing is queued now;
 * *ended is set when no item will ever come. */
int pq_trypop(struct pq *q, void **item, int *ended);

void pq_close(struct pq *q);
void pq_abort(struct pq *q);

/* Items queued now (for trace counters). */
int pq_depth(struct pq *q);

/* Frees and clears *q; items still queued are handed to `drop` (may be
 * NULL). Accepts NULL. */
void pq_free(struct pq **q, void (*drop)(void *item));

#endif
