/*
 * t-controller-stitch-sums.c - the chunks' checksums taken side by side
 * ahead of the stitch's in-order copy (ctl_stitch_sums.c, issue 43): each
 * is the file's SHA-256, as the copy would have summed it; it is handed
 * out once, and only for the very file it was taken of, so a chunk output
 * changed on the storage since (appended to, replaced) is summed again by
 * the copy and found damaged as before.
 */
#include "ctl.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(controller_stitch_sums);

static int make_file(const char *dir, const char *name, int seed, size_t n)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    unsigned char *b = malloc(n);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 31 + (size_t)seed);
    cr_assert_eq(write(fd, b, n), (ssize_t)n);
    free(b);
    return fd;
}

Test(controller_stitch_sums, a_sum_is_handed_once_and_only_for_the_file_it_was_taken_of)
{
    char d[] = "/tmp/vrtest-sums-XXXXXX";
    cr_assert_not_null(mkdtemp(d));
    enum { N = 5 };
    int idx[N], fds[N][2];
    for (int k = 0; k < N; k++) {
        char o[32], t[32];
        snprintf(o, sizeof o, "%05d.mkv", k);
        snprintf(t, sizeof t, "%05d.mkv.ts", k);
        idx[k] = 2 * k;
        fds[k][0] = make_file(d, o, k, 3 << 20);
        fds[k][1] = k == N - 1 ? -1 : make_file(d, t, 100 + k, 1000); /* the last: no sidecar */
    }
    cr_assert_eq(ctl_sums_ahead("jobA", idx, (const int (*)[2])fds, N), N);

    char got[STORAGE_SUM_LEN], want[STORAGE_SUM_LEN];
    /* the same sums as the copy's own, for each chunk of the job */
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(ctl_sums_take("jobA", idx[k], fds[k][0], fds[k][1], got), 1, "chunk %d",
                     idx[k]);
        cr_assert_eq(storage_sum_fds(fds[k], 2, want, NULL), 0);
        cr_assert_str_eq(got, want, "chunk %d", idx[k]);
        /* taken once */
        cr_assert_eq(ctl_sums_take("jobA", idx[k], fds[k][0], fds[k][1], got), 0);
    }
    /* another job's chunk of the same index has none */
    cr_assert_eq(ctl_sums_take("jobB", idx[2], fds[2][0], fds[2][1], got), 0);
    /* appended to since: not this sum (the copy sums again and finds it damaged) */
    cr_assert_eq(write(fds[2][0], "x", 1), 1);
    cr_assert_eq(ctl_sums_take("jobA", idx[2], fds[2][0], fds[2][1], got), 0);
    /* replaced by another file under the same name: not this sum */
    char p[256];
    snprintf(p, sizeof p, "%s/00003.mkv", d);
    cr_assert_eq(unlink(p), 0);
    int other = make_file(d, "00003.mkv", 3, 3 << 20);
    cr_assert_eq(ctl_sums_take("jobA", idx[3], other, fds[3][1], got), 0);
    close(other);
    /* a sidecar asked for where none was summed: not this sum */
    cr_assert_eq(ctl_sums_take("jobA", idx[4], fds[4][0], fds[0][1], got), 0);
    for (int k = 0; k < N; k++) {
        close(fds[k][0]);
        if (fds[k][1] >= 0)
            close(fds[k][1]);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    cr_assert_eq(system(cmd), 0);
}
