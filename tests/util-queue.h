/*
 * util-queue.h - a real redis-server set up as the queue's tests need it:
 * the chunk streams' and the results' groups made, and job "j1" running.
 */
#ifndef VR_UTIL_QUEUE_H
#define VR_UTIL_QUEUE_H

#include "rq.h"
#include "util-redis.h"

/* Starts t (AOF when aof), connects *q, makes the groups and writes job j1
 * (state running, chunks_total). Fails the test on any error. */
void tqueue_start(struct tredis *t, int aof, struct rq **q, int chunks_total);

#endif
