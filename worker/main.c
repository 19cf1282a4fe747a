/*
 * main.c - vr-worker: one process per GPU (or --cpu) that segments people.
 * The subcommands come from the table below; help is generated from it.
 */
#include "cmdtable.h"
#include "commands.h"
#include "config.h"
#include "vio_lib.h"

static const struct cli_cmd worker_cmds[] = {
    { "segment-image", cmd_segment_image, 0,
      "[--model PATH] [--layout auto|mono|sbs|tb] [--profile NAME] [-c FILE] [--raw] IN OUT.png",
      "segment the people in a PNG/JPEG image and write the 8-bit mask as PNG",
      "  --model PATH     tflite model (default: the profile's)\n"
      "  --layout L       auto (default, as process: file name tag _LR/_TB/..., then\n"
      "                   2:1 or 1:2 aspect), mono, sbs (side-by-side) or tb (top-bottom)\n"
      "  OUT.png          the mask is PNG; other names are refused\n"
      "  --profile NAME   " CONFIG_PROFILES_HELP "\n"
      "                   (configs/NAME.json)\n"
      "  -c FILE          JSON overrides on top of the profile\n"
      "  --raw            IN must be the model's input size: one network pass, no\n"
      "                   tiling or refinement; writes sigmoid*255, rounded\n" },
    { "info", cmd_info, 0, "",
      "show the version, build, libav and its encoders, GPUs (NVENC as recorded), tune cache, models", NULL },
    { "process", cmd_process, 0,
      "[--gpu N | --cpu] [--profile NAME] [-c FILE] [--layout auto|mono|sbs|tb]\n"
      "        [--output mask|alpha-packed|greenscreen] [--alpha-area auto|corners]\n"
      "        [--on-decode-error conceal|fail] [--metrics FILE] [--trace FILE]\n"
      "        [--crf N] [--encoder NAME] [--encode-threads N] [-y|-n] IN -o OUT",
      "segment a whole video: decode, segment, encode (audio and other streams copied)",
      "  --gpu N          NVDEC decode + CUDA engine on GPU N (default: GPU 0 if any, else CPU)\n"
      "  --cpu            CPU decode + C reference engine\n"
      "  --profile NAME   " CONFIG_PROFILES_HELP "\n"
      "                   (configs/NAME.json)\n"
      "  -c FILE          JSON overrides (batch, output_scale, encoder, crf, preset, ...;\n"
      "                   \"people\": \"pose\", the Pose tier for far people, GPU or\n"
      "                   --cpu; --profile quality-people turns it on)\n"
      "  --crf N          the encoder's quality, 0..51 (the profile's crf; the matte is\n"
      "                   coded at QP N+2): over -c's crf, as vrctl submit/run --crf\n"
      "  --encoder NAME   auto, vrh264 (the GPU's own matte encoder, any size: an\n"
      "                   8K matte at GPU speed, as H.264 level 6) or an FFmpeg encoder\n"
      "                   (libx264, libx265, ...): over -c's encoder, as vrctl\n"
      "                   submit/run --encoder (auto: H.264, HEVC above 4096 and for\n"
      "                   alpha/greenscreen of an HEVC source)\n"
      "  --layout L       auto (default: stereo metadata, spherical metadata, file-name tag,\n"
      "                   then aspect 2:1 = sbs, 1:2 = tb, else mono), mono, sbs or tb\n"
      "  --output K       mask (default: grayscale matte at output_scale), alpha-packed\n"
      "                   (colour + matte in the fisheye corners, DeoVR-style) or greenscreen\n"
      "  --alpha-area A   where alpha-packed puts the matte: auto (default: the corners of\n"
      "                   each eye when they are black, as around a fisheye; a source with\n"
      "                   picture there, equirectangular or flat, is refused) or corners\n"
      "                   (there anyway, covering that picture)\n"
      "  --on-decode-error A  conceal (default, as ffmpeg): a damaged packet is concealed\n"
      "                   by the decoder or skipped, and counted; fail: it is an error\n"
      "  --metrics FILE   per-stage latency histograms (p50/p95/p99), fps, GPU use as JSON\n"
      "  --trace FILE     Chrome trace of the stages (open in ui.perfetto.dev)\n"
      "  --encode-threads N  threads of the CPU encoder (default: one per core)\n"
      "  -o OUT           output video (.mkv, .mp4 or .mov); written to a temp name, then\n"
      "                   renamed. An http(s):// URL is a WebDAV destination: written\n"
      "                   under $TMPDIR, PUT to a temporary name beside it, then MOVEd\n"
      "                   (s3://bucket/key: one PUT, or a multipart upload over\n"
      "                   $VR_S3_PART_SIZE, completed or aborted whole)\n"
      CLI_REPLACE_HELP },
    { "serve", cmd_serve, CLI_NEEDS_REDIS,
      "--redis URL --storage DIR|URL [--input-root DIR] (--gpu N | --gpu all | --cpu)\n"
      "                [--slots N|auto] [--slot-mode threads|processes] [--heartbeat-ms N]\n"
      "                [--encode-threads N] [--host-slots N]\n"
      "                [--name NAME] [--warm-from FILE] [--warm-together N]\n"
      "                [--storage-allow-private]",
      "pull chunks from Redis and process them",
      "  --storage DIR      the storage root the controller writes to (same files)\n"
      "  --storage URL      chunk outputs go up by WebDAV PUT and MOVE under URL\n"
      "                     (http(s)://dav.host/vrseg/, the controller's --storage URL),\n"
      "                     with or without a DIR; without one, no file is read or\n"
      "                     written but the worker's temporaries ($TMPDIR)\n"
      "  --input-root DIR   chunks are read in place from the job's input, which must lie\n"
      "                     under DIR (default: the storage root); give it the same\n"
      "                     directory as vr-controller --input-root; a URL\n"
      "                     (https://host/media/, s3://bucket/in/): URL sources must lie\n"
      "                     under it, read by HTTP ranges (the controller's URL root)\n"
      "  --storage-allow-private  let URL sources reach loopback, private and link-local\n"
      "                     addresses (refused by default, after DNS and at each redirect)\n"
      "  --gpu N | all      one GPU, or every GPU this process may see\n"
      "  --cpu              the CPU engine (slow; CI and machines without a GPU)\n"
      "  --slots N|auto     worker processes (chunks in flight) on each GPU, or N CPU\n"
      "                     workers, under one parent that passes SIGTERM on: 1 with\n"
      "                     --gpu N and --cpu, auto with --gpu all (a core a slot, 2..10\n"
      "                     per GPU as threads, 2..16 as processes; docs/notes/\n"
      "                     pipeline.md, \"Slots a GPU\"). A worker killed\n"
      "                     by a signal is replaced (after 1 s, doubling to 60 s while\n"
      "                     replacements die young) and its chunk requeued at once\n"
      "  --slot-mode M      how the slots run: threads (the default with --gpu), one\n"
      "                     worker process a GPU (one for all CPU slots) whose threads\n"
      "                     are the slots, sharing one CUDA context (each still a\n"
      "                     worker of its own in Redis; the process killed: every\n"
      "                     thread's chunk requeued at once); processes (the default\n"
      "                     with --cpu), a worker process each\n"
      "  --slot-names A,B   run these workers as threads of this process (set by\n"
      "                     serve --slot-mode threads for the processes it starts)\n"
      "  --name NAME        this worker's name in Redis (default host:gpuN|cpu:random;\n"
      "                     with --slots each worker gets its own)\n"
      "  --heartbeat-ms N   heartbeat and lease renewal period (1000); keep it well\n"
      "                     under the controller's --lease-seconds\n"
      "  --max-chunks N     stop after N chunks (tests, batch nodes)\n"
      "  --encode-threads N threads of the CPU encoder (default: one per core; for a\n"
      "                     picture output, 4 x cores / host slots); fewer when the\n"
      "                     host's cores are wanted elsewhere\n"
      "  --host-slots N     workers sharing this host's cores (set by serve --slots and\n"
      "                     vrctl run for the workers they start; default 1)\n"
      "  --warm-from FILE   before the first chunk, make the decoder (its first frame\n"
      "                     decoded), the engine and the encoder probe for FILE's format\n"
      "                     (FILE under --input-root). Without it the worker warms for\n"
      "                     the source this host's last job read (remembered in Redis).\n"
      "                     A GPU's workers warm a few at a time (different GPUs side\n"
      "                     by side); `vrctl workers` says \"warming\" until they are ready\n"
      "  --warm-together N  up to N of a GPU's workers warm at once (1..16; default 4\n"
      "                     on a GPU, 1 for CPU workers)\n"
      "SIGTERM drains: the chunk in hand is finished, no more are taken.\n"
      "The engine (model, weights, CUDA graphs) stays loaded from one chunk to the\n"
      "next of the same profile and geometry, and the decoder while the streams fit\n"
      "it, however long the worker idles; VR_WARM_ENGINE=0 rebuilds the engine for\n"
      "every chunk and warms nothing (to measure what that costs).\n" },
    { "tune", cmd_tune, 0,
      "[--force] [--gpu N] [--profile P] [-c FILE] [--size WxH] [--layout L] [--image PATH]",
      "auto-tune the CUDA kernels for this GPU and print the table",
      "  --force          re-tune even when the cache has a result for this key\n"
      "  --gpu N          CUDA device index (default 0)\n"
      "  --profile P      " CONFIG_PROFILES_HELP "; -c FILE overrides\n"
      "  --size WxH       frame size to tune for (default 8192x4096)\n"
      "  --layout L       mono, sbs (default) or tb\n"
      "  --image PATH     PNG/JPEG stretched into each eye as the tiles' content\n"
      "                   (default: a synthetic scene)\n"
      "  cache: $VR_TUNE_CACHE, else ~/.cache/vrseg/tune.json\n" },
    { 0 }
};

int main(int argc, char **argv)
{
    cli_version_extra(vio_lib_versions);
    vio_lib_log_route();
    return cli_main("vr-worker", "segments people in VR video, one process per GPU",
                    worker_cmds, argc, argv);
}
