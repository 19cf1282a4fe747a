/*
 * cmd_purge.c - `vrctl purge`: ended jobs (done, failed, cancelled) leave
 * Redis by hand, one by id or all that ended over a duration ago; a live
 * job is refused, never touched. The controllers purge on their own after
 * --keep-jobs (7 days) and remove the purged jobs' storage/jobs/<id>;
 * this command does not see the storage and leaves that to the user.
 */
#include "vrctl.h"

#include "cmdtable.h"
#include "job.h"
#include "rq_jobs.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#define PURGE_SCAN 100000 /* jobs looked at by one --older-than */

/* One job by id: the exit code. */
static int purge_one(struct rq *q, const char *id)
{
    char state[32] = "";
    vr_err e = { 0 };
    int rc = rq_job_purge(q, id, 0, state, sizeof state, &e);
    if (rc == 1) {
        printf("%s purged\n", id);
        return 0;
    }
    if (rc == 0) {
        fprintf(stderr, "vrctl purge: job %s is %s; only ended jobs are purged (vrctl cancel "
                "it first)\n", id, state);
        return 1;
    }
    if (rc == VR_ENOENT)
        return vrctl_no_job(id);
    fprintf(stderr, "vrctl purge: %s\n", e.msg);
    return 1;
}

/* Every job that ended more than older_s ago: the exit code. */
static int purge_older(struct rq *q, double older_s)
{
    long long before = rq_now_ms() - (long long)(older_s * 1000);
    char (*ids)[48] = malloc(PURGE_SCAN * sizeof *ids);
    if (!ids)
        return 1;
    vr_err e = { 0 };
    int n = rq_jobs_created_before(q, before, ids, PURGE_SCAN, &e), purged = 0, rc = 0;
    if (n < 0) {
        fprintf(stderr, "vrctl purge: %s\n", e.msg);
        rc = 1;
    }
    for (int i = 0; i < n && rc == 0; i++) {
        int r = job_id_valid(ids[i]) ? rq_job_purge(q, ids[i], before, NULL, 0, &e) : 2;
        if (r < 0 && r != VR_ENOENT) {
            fprintf(stderr, "vrctl purge: %s\n", e.msg);
            rc = 1;
        }
        purged += r == 1;
    }
    free(ids);
    printf("%d job%s purged\n", purged, purged == 1 ? "" : "s");
    return rc;
}

int cmd_purge(int argc, char **argv)
{
    static const struct option opts[] = {
        RQ_LONGOPTS_REDIS,
        { "older-than", required_argument, 0, 'O' },
        { 0, 0, 0, 0 }
    };
    struct rq_opts ro = { 0 };
    double older_s = -1;
    int o;
    while ((o = cli_getopt(argc, argv, "", opts)) != -1) {
        if (rq_opts_take(&ro, o, optarg))
            continue;
        switch (o) {
        case 'O':
            if (cli_opt_duration("--older-than", optarg, 3650 * 86400.0, &older_s))
                return 2;
            break;
        default: return 2; /* '?': cli_getopt said why */
        }
    }
    const char *id = optind < argc ? argv[optind] : NULL;
    if (argc - optind > 1)
        return cli_usage_error("too many arguments");
    if (!id == (older_s < 0))
        return cli_usage_error("give a job id or --older-than D");
    if (id && !job_id_valid(id))
        return cli_usage_error("'%s' is not a job id", id);
    struct rq *q = NULL;
    int rc = vrctl_connect(ro.redis, &q);
    if (rc)
        return rc;
    if (vrctl_asker()[0] && !vrctl_submitter()[0]) { /* the operator's user: a controller does it */
        char before[32];
        snprintf(before, sizeof before, "%lld", rq_now_ms() - (long long)(older_s * 1000));
        rc = id ? vrctl_ask(q, "purge", id) : vrctl_ask(q, "purge-before", before);
    } else
        rc = id ? purge_one(q, id) : purge_older(q, older_s);
    rq_free(&q);
    return rc;
}
