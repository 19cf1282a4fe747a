/*
 * pipeline_queue.c - the bounded blocking queue between pipeline stages
 * (see pipeline_queue.h): a ring of pointers, one mutex, two conditions.
 */
#include "pipeline_queue.h"

#include <pthread.h>
#include <stdlib.h>

struct pq {
    pthread_mutex_t lock;
    pthread_cond_t not_full, not_empty;
    void **ring;
    int cap, head, n;
    int closed, aborted;
};

int pq_create(int cap, struct pq **out, vr_err *err)
{
    *out = NULL;
    struct pq *q = calloc(1, sizeof *q);
    if (!q || cap < 1 || !(q->ring = calloc((size_t)cap, sizeof *q->ring))) {
        free(q);
        return vr_err_set(err, cap < 1 ? VR_EINVAL : VR_ENOMEM, "queue: cannot create (capacity %d)", cap);
    }
    q->cap = cap;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_full, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    *out = q;
    return 0;
}

int pq_push(struct pq *q, void *item)
{
    pthread_mutex_lock(&q->lock);
    while (q->n == q->cap && !q->aborted && !q->closed)
        pthread_cond_wait(&q->not_full, &q->lock);
    int ok = !q->aborted && !q->closed;
    if (ok) {
        q->ring[(q->head + q->n) % q->cap] = item;
        q->n++;
        pthread_cond_signal(&q->not_empty);
    }
    pthread_mutex_unlock(&q->lock);
    return ok;
}

static void take(struct pq *q, void **item)
{
    *item = q->ring[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    pthread_cond_signal(&q->not_full);
}

int pq_pop(struct pq *q, void **item)
{
    pthread_mutex_lock(&q->lock);
    while (q->n == 0 && !q->closed && !q->aborted)
        pthread_cond_wait(&q->not_empty, &q->lock);
    int ok = q->n > 0 && !q->aborted;
    if (ok)
        take(q, item);
    pthread_mutex_unlock(&q->lock);
    return ok;
}

int pq_trypop(struct pq *q, void **item, int *ended)
{
    pthread_mutex_lock(&q->lock);
    int ok = q->n > 0 && !q->aborted;
    if (ok)
        take(q, item);
    *ended = q->aborted || (q->closed && q->n == 0);
    pthread_mutex_unlock(&q->lock);
    return ok;
}

void pq_close(struct pq *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->lock);
}

void pq_abort(struct pq *q)
{
    pthread_mutex_lock(&q->lock);
    q->aborted = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->lock);
}

int pq_depth(struct pq *q)
{
    pthread_mutex_lock(&q->lock);
    int n = q->n;
    pthread_mutex_unlock(&q->lock);
    return n;
}

void pq_free(struct pq **qp, void (*drop)(void *item))
{
    struct pq *q = qp ? *qp : NULL;
    if (!q)
        return;
    for (int i = 0; i < q->n; i++)
        if (drop)
            drop(q->ring[(q->head + i) % q->cap]);
    free(q->ring);
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->not_full);
    pthread_cond_destroy(&q->not_empty);
    free(q);
    *qp = NULL;
}
