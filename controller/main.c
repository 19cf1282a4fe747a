/*
 * main.c - vr-controller: splits jobs into chunks, enqueues them in Redis,
 * reclaims stalled chunks, stitches and aggregates. Subcommands from a table.
 */
#include "cmdtable.h"
#include "ctl.h"
#include "vio_lib.h"

#include <curl/curl.h>
#include <stdio.h>

static const struct cli_cmd controller_cmds[] = {
    { "run", cmd_controller_run, CLI_DEFAULT | CLI_NEEDS_REDIS,
      "--redis URL --storage DIR [--input-root DIR] [--output-root DIR] [--lease-seconds N]\n"
      "       [--keep-chunks] [--keep-jobs D] [--metrics-listen [ADDR:]PORT] [--notify URL]\n"
      "       [--notify-secret-file FILE] [--notify-timeout S] [--notify-attempts N]\n"
      "       [--notify-allow-private] [--loop-stall-seconds S] [--storage-allow-private]\n"
      "       [--max-chunks N] [--submitter NAME:MAX[:CHUNKS]]...",
      "consume jobs and results until stopped (the default command)",
      "  --storage DIR      storage root every node mounts (chunks go to DIR/jobs/<id>/)\n"
      "  --storage URL      beside DIR: chunk outputs lie under URL (WebDAV), put there\n"
      "                     by the workers (vr-worker serve --storage URL), read back\n"
      "                     by the stitch; an ended job's (done, failed, cancelled) are\n"
      "                     deleted by one DELETE of URL/jobs/<id>/ off the loop, retried\n"
      "                     each minute while the store refuses; DIR keeps the rest\n"
      "  --lease-seconds N  reclaim a chunk whose worker stopped renewing for N s (30)\n"
      "  --input-root DIR   a job's input must lie under DIR (default: the storage root);\n"
      "                     a URL (https://host/media/, s3://bucket/in/): a job's URL input\n"
      "                     must lie under it, read by HTTP ranges (README.md, 'A fleet\n"
      "                     without shared storage'); files stay under the storage root\n"
      "  --output-root DIR  a job's output must lie under DIR (default: the storage root);\n"
      "                     no link under either root is followed, and a job naming a path\n"
      "                     outside its root fails, the message naming root and option;\n"
      "                     a URL (https://dav.example.com/out/): a job's URL output must\n"
      "                     lie under it; stitched under the storage root, then PUT to a\n"
      "                     temporary name and MOVEd whole to its name (WebDAV)\n"
      "  --keep-chunks      keep DIR/jobs/<id>/{in,out} after a job is done (and every\n"
      "                     job's chunk objects under a --storage URL)\n"
      "  --keep-jobs D      purge a job (its Redis records and DIR/jobs/<id>) D after it\n"
      "                     ended: 90s, 30m, 12h, 7d (default 7d; 0: keep for ever);\n"
      "                     a live job is never purged (vrctl purge: by hand); a\n"
      "                     DIR/jobs/<id> with no job record in Redis (a FLUSHALL) is\n"
      "                     removed D after it is first seen so (1h when D is 0)\n"
      "  --metrics-listen [ADDR:]PORT  serve the fleet's figures in the Prometheus text\n"
      "                     format on /metrics, and /healthz (200 when Redis answers and\n"
      "                     the loop turns, else 503); off unless given. PORT alone: 127.0.0.1 only;\n"
      "                     name the address to listen beyond this host (0.0.0.0:9464,\n"
      "                     [::]:9464): no authentication, job ids and hosts visible\n"
      "  --notify URL       POST every job's end (done, failed, cancelled) to URL as JSON,\n"
      "                     besides the job's own `vrctl submit --notify`; http(s) only,\n"
      "                     redirects to other schemes refused (README.md, 'Webhooks')\n"
      "  --notify-secret-file FILE\n"
      "                     sign each POST: X-Vrseg-Signature: t=<unix time>,v1=<HMAC-SHA256\n"
      "                     of \"<t>.<delivery>.<event>.<body>\" keyed by FILE's first line>\n"
      "                     (default $VR_NOTIFY_SECRET_FILE; none: unsigned)\n"
      "  --notify-timeout S one POST's limit, redirects included (10; connect: 5 at most)\n"
      "  --notify-attempts N  tries per URL before it is given up (20); retries wait 1 s,\n"
      "                     2 s, 4 s ... up to 5 min, kept in Redis across restarts\n"
      "  --notify-allow-private  let webhooks reach loopback, private and link-local\n"
      "                     addresses (refused by default, after DNS and at each redirect)\n"
      "  --storage-allow-private  let URL sources and outputs reach loopback, private and link-local\n"
      "                     addresses (refused by default, after DNS and at each redirect)\n"
      "  --loop-stall-seconds S  a loop that has not turned for S s (60) is stuck:\n"
      "                     /healthz says 503 and the heartbeat is withdrawn, so another\n"
      "                     controller takes its jobs over\n"
      "  --max-chunks N     at most N chunks a job (1000): a shorter --chunk-seconds is\n"
      "                     widened to the source's duration / N\n"
      "  --submitter NAME:MAX[:CHUNKS]  take jobs from submitter NAME's own Redis\n"
      "                     user (vrsub-NAME: README, Security) with its inputs under\n"
      "                     INPUT-ROOT/NAME, its outputs under OUTPUT-ROOT/NAME, at most\n"
      "                     MAX of its jobs queued or running at once, and at most\n"
      "                     CHUNKS chunks of them (CHUNKS / MAX a job: a job's chunk\n"
      "                     length is widened to fit); cancels and retries NAME's own\n"
      "                     jobs when NAME asks (repeatable)\n"
      "SIGTERM or Ctrl-C stops it; another controller (or a restart) carries on.\n" },
    { 0 }
};

int main(int argc, char **argv)
{
    vio_lib_log_route();
    /* once, before any thread: the webhook sender (ctl_notify.c) uses libcurl */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "vr-controller: libcurl failed to start\n");
        return 1;
    }
    int rc = cli_main("vr-controller", "splits, distributes and stitches vrseg jobs",
                      controller_cmds, argc, argv);
    curl_global_cleanup();
    return rc;
}
