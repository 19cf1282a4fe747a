/*
 * ctl_stitch_sums.c - the checksums of a job's ready chunks, taken side by
 * side before the stitch copies them in order (issue 43).
 *
 * On one GPU every slot's chunk ends within a second of the others, so
 * the stitch ahead finds them all ready at once and its one thread summed
 * (SHA-256) and copied them one after the other: ~250 MB/s, a quarter of
 * a 7 200-frame job's time, with the GPU idle. The sums are independent,
 * so they run here on a thread a chunk (at most CTL_SUMS_THREADS at a
 * time) while the copy waits only for the one it is at.
 *
 * What a sum was taken of is the file's identity (device, inode, size,
 * modification and change times): the copy uses the sum only when the
 * file it opened has the same, else it sums again itself, as before. A
 * sum is taken once (the copy consumes it); the comparison with the
 * commit's sum stays the copy's (ctl_stitch.c), so a damaged chunk is
 * found and computed again exactly as without this.
 */
#include "ctl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CTL_SUMS_MAX 128    /* sums kept waiting for their copy */
#define CTL_SUMS_THREADS 8  /* sums taken at once */

struct ctl_sum {
    char id[JOB_ID_MAX];
    int idx, nfd;
    struct stat st[2];      /* what was summed: the output, then its sidecar */
    int ok;                 /* sum holds the files' checksum */
    char sum[STORAGE_SUM_LEN];
    int fds[2];             /* while summing only */
};

static pthread_mutex_t ctl_sums_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ctl_sum ctl_sums[CTL_SUMS_MAX];
static int ctl_nsums;

static int ctl_same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

struct ctl_sums_run {
    struct ctl_sum *s;
    int n, next;            /* the next entry a thread takes (under mu) */
    pthread_mutex_t mu;
};

static void *ctl_sums_main(void *arg)
{
    struct ctl_sums_run *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        int i = r->next < r->n ? r->next++ : -1;
        pthread_mutex_unlock(&r->mu);
        if (i < 0)
            return NULL;
        struct ctl_sum *s = &r->s[i];
        s->ok = storage_sum_fds(s->fds, s->nfd, s->sum, NULL) == 0;
    }
}

int ctl_sums_ahead(const char *id, const int *idx, const int (*fds)[2], int n)
{
    struct ctl_sum *s = calloc(n > 0 ? (size_t)n : 1, sizeof *s);
    if (!s)
        return 0;
    int m = 0;
    for (int k = 0; k < n; k++) {
        struct ctl_sum *e = &s[m];
        snprintf(e->id, sizeof e->id, "%s", id);
        e->idx = idx[k];
        e->nfd = fds[k][1] >= 0 ? 2 : 1;
        int bad = 0;
        for (int f = 0; f < e->nfd; f++) {
            e->fds[f] = fds[k][f];
            bad |= fstat(e->fds[f], &e->st[f]) < 0;
        }
        m += !bad;
    }
    struct ctl_sums_run r = { .s = s, .n = m };
    pthread_mutex_init(&r.mu, NULL);
    pthread_t th[CTL_SUMS_THREADS];
    int nth = 0;
    while (nth < CTL_SUMS_THREADS && nth < m - 1 &&
           pthread_create(&th[nth], NULL, ctl_sums_main, &r) == 0)
        nth++;
    ctl_sums_main(&r); /* this thread takes its share too */
    for (int t = 0; t < nth; t++)
        pthread_join(th[t], NULL);
    pthread_mutex_destroy(&r.mu);
    int kept = 0;
    pthread_mutex_lock(&ctl_sums_mu);
    for (int k = 0; k < m; k++) {
        if (!s[k].ok)
            continue;
        if (ctl_nsums == CTL_SUMS_MAX) /* the oldest go: their copy sums itself */
            memmove(&ctl_sums[0], &ctl_sums[1], (CTL_SUMS_MAX - 1) * sizeof ctl_sums[0]);
        ctl_sums[ctl_nsums < CTL_SUMS_MAX ? ctl_nsums++ : CTL_SUMS_MAX - 1] = s[k];
        kept++;
    }
    pthread_mutex_unlock(&ctl_sums_mu);
    free(s);
    return kept;
}

int ctl_sums_take(const char *id, int idx, int fd, int tfd, char out[STORAGE_SUM_LEN])
{
    struct stat st[2];
    int nfd = tfd >= 0 ? 2 : 1;
    if (fstat(fd, &st[0]) < 0 || (tfd >= 0 && fstat(tfd, &st[1]) < 0))
        return 0;
    int found = 0;
    pthread_mutex_lock(&ctl_sums_mu);
    for (int i = 0; i < ctl_nsums; i++) {
        struct ctl_sum *e = &ctl_sums[i];
        if (e->idx != idx || strcmp(e->id, id))
            continue;
        found = e->nfd == nfd && ctl_same_file(&e->st[0], &st[0]) &&
                (nfd == 1 || ctl_same_file(&e->st[1], &st[1]));
        if (found)
            memcpy(out, e->sum, STORAGE_SUM_LEN);
        ctl_sums[i] = ctl_sums[--ctl_nsums]; /* taken once, or stale: gone either way */
        break;
    }
    pthread_mutex_unlock(&ctl_sums_mu);
    return found;
}
