/*
 * main.c - vrctl: the user's command line for vrseg jobs. Subcommands from a
 * table; help is generated from it.
 */
#include "cmdtable.h"
#include "config.h"
#include "vio_lib.h"
#include "vrctl.h"

#define VRCTL_STR_(x) #x
#define VRCTL_STR(x) VRCTL_STR_(x)

/* The job options submit and run share with `vr-worker process`. */
#define VRCTL_SPEC_HELP                                                                         \
    "  --profile P        " CONFIG_PROFILES_HELP "\n"                                          \
    "  -c FILE            JSON overrides on the profile (as vr-worker process -c), checked\n"  \
    "                     now and applied to every chunk\n"                                     \
    "  --crf N            the encoder's quality, 0..51 (the profile's crf: fast 26,\n"   \
    "                     balanced 23, quality 18; the matte is coded at QP N+2), over\n" \
    "                     -c's crf, as vr-worker process --crf\n"                        \
    "  --encoder NAME     auto, vrh264 (the matte on the GPU, any size) or an FFmpeg\n"  \
    "                     encoder (libx264, libx265, ...), over -c's,\n"              \
    "                     as vr-worker process --encoder\n"                              \
    "  --json             print the result as one JSON object on stdout (id, state,\n"  \
    "                     input, output, frames, fps, wall_s, error, ..., exit)\n"       \
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
    "                     as a pre-roll, so make S several GOPs long; a cut moves up\n" \
    "                     to S/4 to a keyframe with a shorter pre-roll\n"               \
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
#define VRCTL_AS_SUBMITTER_HELP                                                                 \
    "Logged in as Redis user vrsub-NAME, vrctl asks a controller run with\n"                    \
    "--submitter NAME:MAX through NAME's own stream and waits (30 s at most) for\n"             \
    "its answer: it does so only for NAME's own jobs (another's: no such job).\n"  \
    VRCTL_AS_OPERATOR_HELP
#define VRCTL_AS_OPERATOR_HELP                                                                  \
    "Logged in as Redis user vrctl (the operator's), vrctl asks any controller\n"               \
    "through the stream vr:submit:@ops and waits (30 s at most) for its answer.\n"

static const struct cli_cmd vrctl_cmds[] = {
    { "submit", cmd_submit, CLI_NEEDS_REDIS,
      "IN|DIR|GLOB... -o OUT [--profile P] [-c FILE] [--crf N] [--encoder NAME] [--layout L]\n"
      "       [--output KIND] [--chunk-seconds S] [--chunking C] [--on-decode-error A]\n"
      "       [--notify URL] [--priority N] [--wait] [--json] [-y|-n]",
      "validate a video and enqueue it as a job; prints the job id",
      "  -o OUT             output file, written by the controller: .mkv, .mp4 or .mov\n"
      "                     (what the stitch can write; others are refused now). IN and\n"
      "                     OUT must lie under the controller's --input-root and\n"
      "                     --output-root (default: its storage root), or the job fails;\n"
      "                     IN may be an https:// or s3:// URL under their URL --input-root\n"
      "                     (read by HTTP ranges; README.md, 'A fleet without shared storage')\n"
      "                     and OUT an http(s):// WebDAV or s3:// URL under its URL\n"
      "                     --output-root: stitched under the storage root, then PUT to a\n"
      "                     temporary name and MOVEd (WebDAV), or one PUT or a multipart\n"
      "                     upload (s3://)\n"
      "                     Logged in as Redis user vrsub-NAME (--redis\n"
      "                     redis://vrsub-NAME@host), the job is asked for as submitter\n"
      "                     NAME: a controller run with --submitter NAME:MAX records it\n"
      "                     when IN and OUT lie under NAME/ in its roots and NAME has\n"
      "                     fewer than MAX live jobs, else records it failed (status says\n"
      "                     why); the id printed is the job's once a controller took it.\n"
      "                     Logged in as Redis user vrctl (the operator's), the job is\n"
      "                     asked for in vr:submit:@ops: a controller checks it again,\n"
      "                     records it and answers (30 s at most); a refusal is printed,\n"
      "                     exit 2. No controller alive: the id is printed at once and\n"
      "                     the first controller to start records the job\n"
      "  DIR, GLOB or several inputs: a batch, one job a video (a directory's files,\n"
      "                     a quoted pattern's matches); -o is then a directory and\n"
      "                     each output is OUT/<name less extension>.<kind>.mkv. What\n"
      "                     is no video (or a still image) is refused, a line each;\n"
      "                     prints \"ID  IN -> OUT\" a job; exit 2 when none was queued.\n"
      "                     --wait then watches every live job\n"
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
      "Logged in as Redis user vrsub-NAME, vrctl reads NAME's own jobs only (ids\n"
      "NAMES...): without JOB it lists NAME's live jobs (watch too).\n"
      VRCTL_EXIT_HELP },
    { "watch", cmd_watch, CLI_NEEDS_REDIS, "[JOB]",
      "live progress bar until the job ends (exit 0 = done); no JOB: every live job",
      "  JOB                the job; without it every job live now or submitted while\n"
      "                     it runs, a bar each, until all end (exit 0: all done;\n"
      "                     at once when none is live)\n"
      "On a terminal the bar counts the frames the running chunks have encoded and\n"
      "never goes back (a killed worker's frames stay until redone); a worker that\n"
      "stops answering and a Redis outage show as event lines; lines are cut to the\n"
      "terminal's width. Without a terminal: log lines.\n"
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
      VRCTL_AS_SUBMITTER_HELP VRCTL_EXIT_HELP },
    { "retry", cmd_retry, CLI_NEEDS_REDIS, "JOB", "re-run a failed (or cancelled) job: its unfinished chunks, or its split or stitch",
      VRCTL_AS_SUBMITTER_HELP "A submitter's retry counts against its MAX live jobs.\n" VRCTL_EXIT_HELP },
    { "purge", cmd_purge, CLI_NEEDS_REDIS, "JOB | --older-than D",
      "delete ended jobs' records from Redis (never a live job)",
      "  JOB                one ended job (done, failed or cancelled)\n"
      "  --older-than D     every job that ended more than D ago: 90s, 30m, 12h, 7d\n"
      "The controllers purge jobs on their own D after they end (vr-controller\n"
      "--keep-jobs, 7 days by default), storage/jobs/<id> with them; vrctl purge,\n"
      "which does not see the storage, leaves that directory to be removed by hand.\n"
      VRCTL_AS_OPERATOR_HELP VRCTL_EXIT_HELP },
    { "metrics", cmd_metrics, CLI_NEEDS_REDIS, "JOB [--json]",
      "per-stage timings and percentiles (merged histograms) of a job", VRCTL_EXIT_HELP },
    { "report", cmd_report, CLI_NEEDS_REDIS, "JOB -o FILE.html [-y|-n]",
      "a job as one self-contained HTML page: source | matte frames, fps over time, chunks per "
      "worker, stages, GPUs",
      "  -o FILE            where to write it (any name; it fetches nothing when opened;\n"
      "                     never the job's input or output video)\n"
      CLI_REPLACE_HELP
      "It shows throughput over time for the job and each worker, a timeline of the\n"
      "chunks per worker (queued, running, committed, retried, cut, dead), the stage\n"
      "percentiles from the merged histograms, GPU use and memory per worker, split\n"
      "and stitch time, chunk errors and the job's events. It works while the job runs.\n"
      VRCTL_EXIT_HELP },
    { "run", cmd_run, 0,
      "IN -o OUT [--workers N] [--cpu] [--per-gpu N] [--slot-mode M] [--profile P] [-c FILE] [--layout L]\n"
      "       [--output KIND] [--chunk-seconds S] [--chunking C] [--encode-threads N]\n"
      "       [--on-decode-error A] [--notify URL [--notify-secret-file FILE]\n"
      "       [--notify-allow-private]] [--crf N] [--encoder NAME] [--resume] [--keep-temp]\n"
      "       [--json] [-y|-n]",
      "all-in-one local mode: private redis, controller and workers",
      "  -o OUT             output file: .mkv, .mp4 or .mov (checked before it starts);\n"
      "                     an http(s):// URL is a WebDAV destination, written under\n"
      "                     $TMPDIR then PUT beside it and MOVEd (not with --resume)\n"
      "  --workers N        CPU workers (with --cpu; default one per core, at most 16)\n"
      "  --per-gpu N        chunks in flight per GPU: the GPU workers run as one\n"
      "                     `vr-worker serve --gpu all --slots N` (1..16; default a\n"
      "                     core a slot, 2..10 per GPU as threads, 2..16 as\n"
      "                     processes: docs/notes/pipeline.md, \"Slots a GPU\")\n"
      "  --slot-mode M      how the GPU workers run: threads of one process a GPU or a\n"
      "                     process each (serve --slot-mode; default: serve's)\n"
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
    { "completion", cmd_completion, 0, "bash|zsh",
      "print shell completion for vrctl, generated from this command table",
      "  bash               source it: vrctl completion bash > \\\n"
      "                     ~/.local/share/bash-completion/completions/vrctl\n"
      "  zsh                save it as _vrctl in a directory of $fpath\n" },
    { "man", cmd_man, 0, "[CMD | --list]",
      "print a man page (troff) generated from this command table",
      "  CMD                the page vrctl-CMD(1); none: vrctl(1)\n"
      "  --list             the commands, one a line (make man writes man/*.1)\n" },
    { 0 }
};

int main(int argc, char **argv)
{
    vio_lib_log_route();
    return cli_main("vrctl", "submit and watch vrseg background-removal jobs",
                    vrctl_cmds, argc, argv);
}
