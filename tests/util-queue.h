/*
 * util-queue.h - a real redis-server set up as the queue's tests need it:
 * the chunk streams' and the results' groups made, and job "j1" running;
 * a chunk taken as a worker takes it.
 */
#ifndef VR_UTIL_QUEUE_H
#define VR_UTIL_QUEUE_H

#include "rq.h"
#include "util-redis.h"

/* Starts t (AOF when aof), connects *q, makes the groups and writes job j1
 * (state running, chunks_total). Fails the test on any error. */
void tqueue_start(struct tredis *t, int aof, struct rq **q, int chunks_total);

/* Delivers the next chunk entry to `consumer` and starts it, reading as a
 * worker does: the priority stream (where a chunk tried again or a cut's
 * tail goes) first. Returns rq_chunk_start's answer (0: nothing waits);
 * fails the test on an error. */
int tqueue_take(struct rq *q, const char *consumer, struct rq_msg *m, struct rq_start *st);

/* Field f of job id's record as a number (0 when absent). */
long long tqueue_job_ll(struct rq *q, const char *id, const char *f);

#endif
