/*
 * main.c - vrctl: the user's command line for vrseg jobs. Subcommands from a
 * table; help is generated from it.
 */
#include "cmdtable.h"
#include "vio_lib.h"
#include "vrctl.h"

#define VRCTL_STR_(x) #x
#define VRCTL_STR(x) VRCTL_STR_(x)

/* The job options submit and run share with `vr-worker process`. */
#define VRCTL_SPEC_HELP                                                                         \
    "  --profile P        fast, balanced (default) or quality\n"                               \
    "  -c FILE            JSON overrides on the profile (as vr-worker process -c), checked\n"  \
    "                     now and applied to every chunk\n"                                     \
    "  --layout L         auto (default: stereo metadata, then file name tag, then aspect,\n"  \
    "                     decided once from the whole source), mono, sbs or tb\n"              \
    "  --output KIND      mask (default), alpha (= alpha-packed) or greenscreen\n"      \
    "  --alpha-area A     auto (default: alpha is refused where the eyes' corners hold\n"  \
    "                     picture, equirectangular or flat) or corners (the matte\n"       \
    "                     packed there anyway, as vr-worker process --alpha-area)\n"     \
    "  --notify URL       POST the job's end (done, failed, cancelled) to URL as JSON;\n"  \
    "                     http:// or https:// only (README.md, 'Webhooks')\n"             \
    "  --chunk-seconds S  chunk length, cut at keyframes; auto (default): at most\n"     \
    "                     " VRCTL_STR(JOB_CHUNK_SECONDS_DEFAULT) " s, at least " VRCTL_STR(JOB_CHUNK_SECONDS_MIN_AUTO) " s, and a whole number of waves\n" \
    "                     over the workers (vrctl run: its own; submit: those alive\n" \
    "                     at the split), so none idles at the tail; a chunk's fixed\n" \
    "                     cost (codec set-up, pre-roll GOP) stays small. With an\n"   \
    "                     open-GOP HEVC source each chunk carries the GOP before it\n" \
    "                     as a pre-roll, so make S several GOPs long\n"                 \
    "  --chunking C       auto (default): chunks are ranges of the input, read in place\n" \
    "                     by the workers, where its container has a keyframe index (MP4,\n" \
    "                     Matroska with Cues), else cut into files first; range: only\n" \
    "                     in place (the job fails if it cannot be); copy: always cut\n" \
    "                     (for workers that cannot see the input under their\n"        \
    "                     --input-root)\n"                                              \
    "  --on-decode-error A  conceal (default, as ffmpeg): a damaged packet is concealed\n" \
    "                     by the decoder or skipped, counted in the chunk's events;\n"    \
    "                     fail: it fails the job (a permanent chunk error)\n"

/* The exit codes of the commands that take a job. */
#define VRCTL_EXIT_HELP                                                                         \
    "exit: 0 ok, 1 failed (or, for watch, the job failed or was cancelled),\n"                \
    "      2 bad usage or no such job (\"vrctl CMD: no job 'ID'\")\n"

static const struct cli_cmd vrctl_cmds[] = {
    { "submit", cmd_submit, CLI_NEEDS_REDIS,
      "IN -o OUT [--profile P] [-c FILE] [--layout L] [--output KIND] [--chunk-seconds S]\n"
      "       [--chunking C] [--on-decode-error A] [--notify URL] [--priority N] [--wait]\n"
      "       [-y|-n]",
      "validate a video and enqueue it as a job; prints the job id",
      "  -o OUT             output file, written by the controller: .mkv, .mp4 or .mov\n"
      "                     (what the stitch can write; others are refused now). IN and\n"
      "                     OUT must lie under the controller's --input-root and\n"
      "                     --output-root (default: its storage root), or the job fails\n"
      VRCTL_SPEC_HELP
      "  --priority N       -100..100 (0); above 0 its chunks go ahead of normal jobs\n"
      "  --max-attempts N   failures of a chunk before it is dead-lettered (3); each\n"
      "                     retry waits a backoff (2 s, doubling); a worker's death\n"
      "                     is not counted here (its own limit: 10)\n"
      "  --wait             show progress until the job ends; exit 0 only when done\n"
      CLI_REPLACE_HELP
      "A second job with the -o of a job still in flight is refused.\n" },
    { "status", cmd_status, CLI_NEEDS_REDIS, "[JOB] [--state S[,S]] [--json]",
      "show jobs and their progress",
      "  --state S[,S]      only jobs in these states (queued, splitting, running, stitching,\n"
      "                     done, failed, cancelled)\n"
      "  --json             machine-readable (state, frames, chunks_total, chunks_done, fps, ...)\n"
      "A live job with no controller or no worker alive gets a note saying which\n"
      "(\"hints\" in --json); watch and submit say it too.\n"
      VRCTL_EXIT_HELP },
    { "watch", cmd_watch, CLI_NEEDS_REDIS, "JOB", "live progress bar until the job ends (exit 0 = done)",
      VRCTL_EXIT_HELP },
    { "events", cmd_events, CLI_NEEDS_REDIS, "JOB [--follow] [--json]",
      "the job's events: chunks done, requeued (and whose lease lapsed), commits retried",
      "  --follow           go on printing new events until the job ends\n"
      "  --json             one JSON object a line: id, time_ms, chunk, worker, event, msg\n"
      VRCTL_EXIT_HELP },
    { "workers", cmd_workers, CLI_NEEDS_REDIS, "[--json]", "list live workers with GPU, chunk and fps",
      "  --json             machine-readable (name, gpu, state, chunk, fps, chunks_done,\n"
      "                     frames_done)\n" },
    { "cancel", cmd_cancel, CLI_NEEDS_REDIS, "JOB", "cancel a job: drop its chunks, stop running ones",
      VRCTL_EXIT_HELP },
    { "retry", cmd_retry, CLI_NEEDS_REDIS, "JOB", "re-run a failed (or cancelled) job: its unfinished chunks, or its split or stitch",
      VRCTL_EXIT_HELP },
    { "purge", cmd_purge, CLI_NEEDS_REDIS, "JOB | --older-than D",
      "delete ended jobs' records from Redis (never a live job)",
      "  JOB                one ended job (done, failed or cancelled)\n"
      "  --older-than D     every job that ended more than D ago: 90s, 30m, 12h, 7d\n"
      "The controllers purge jobs on their own D after they end (vr-controller\n"
      "--keep-jobs, 7 days by default), storage/jobs/<id> with them; vrctl purge,\n"
      "which does not see the storage, leaves that directory to be removed by hand.\n"
      VRCTL_EXIT_HELP },
    { "metrics", cmd_metrics, CLI_NEEDS_REDIS, "JOB [--json]",
      "per-stage timings and percentiles (merged histograms) of a job", VRCTL_EXIT_HELP },
    { "report", cmd_report, CLI_NEEDS_REDIS, "JOB -o FILE.html [-y|-n]",
      "a job as one self-contained HTML page: fps over time, chunks per worker, stages, GPUs",
      "  -o FILE            where to write it (any name; it fetches nothing when opened;\n"
      "                     never the job's input or output video)\n"
      CLI_REPLACE_HELP
      "It shows throughput over time for the job and each worker, a timeline of the\n"
      "chunks per worker (queued, running, committed, retried, dead), the stage\n"
      "percentiles from the merged histograms, GPU use and memory per worker, split\n"
      "and stitch time, chunk errors and the job's events. It works while the job runs.\n"
      VRCTL_EXIT_HELP },
    { "run", cmd_run, 0,
      "IN -o OUT [--workers N] [--cpu] [--per-gpu N] [--profile P] [-c FILE] [--layout L]\n"
      "       [--output KIND] [--chunk-seconds S] [--chunking C] [--encode-threads N]\n"
      "       [--on-decode-error A] [--notify URL [--notify-secret-file FILE]\n"
      "       [--notify-allow-private]] [--resume] [--keep-temp] [-y|-n]",
      "all-in-one local mode: private redis, controller and workers",
      "  -o OUT             output file: .mkv, .mp4 or .mov (checked before it starts)\n"
      "  --workers N        CPU workers (with --cpu; default one per core, at most 16)\n"
      "  --per-gpu N        chunks in flight per GPU, one worker process each (1..16,\n"
      "                     as serve --slots; default half the cores per GPU, 2..8):\n"
      "                     one NVDEC session alone cannot keep up with 8K60, each\n"
      "                     slot's x264 needs cores\n"
      "  --cpu              use the CPU engine even if a GPU is present\n"
      "  --encode-threads N each worker's CPU encoder threads (default: one per core)\n"
      VRCTL_SPEC_HELP
      "  --lease-seconds N  reclaim a stalled chunk after N s (30)\n"
      "  --notify-secret-file FILE  sign the --notify POST (as vr-controller's option);\n"
      "                     vrctl run waits for the webhook (at most 60 s) before it ends\n"
      "  --notify-allow-private  the POST may go to a loopback, private or link-local\n"
      "                     address (as vr-controller's option)\n"
      "  --keep-temp        keep the work dir (logs, chunks) afterwards\n"
      "  --resume           carry on with the job a stopped run of the same command\n"
      "                     (input, output, options) left: its committed chunks kept\n"
      CLI_REPLACE_HELP
      "Its controller reads under IN's directory and writes under OUT's only.\n"
      "Ctrl-C (or kill -9) stops everything it started and keeps the committed\n"
      "chunks in its work dir ($XDG_RUNTIME_DIR, else $TMPDIR or /tmp: vrctl-run-XXXXXX,\n"
      "the digest of the options recorded inside)\n"
      "for --resume, as av1an does; without --resume the job starts afresh and an\n"
      "earlier run's work dir is removed, as it is when the job ends. A work dir\n"
      "no run holds and nobody resumed for a day is removed by the next run. After\n"
      "a kill -9 of vrctl its processes die with it. If the controller or every\n"
      "worker dies, it says which (signal, log) and exits 1.\n" },
    { 0 }
};

int main(int argc, char **argv)
{
    vio_lib_log_route();
    return cli_main("vrctl", "submit and watch vrseg background-removal jobs",
                    vrctl_cmds, argc, argv);
}
