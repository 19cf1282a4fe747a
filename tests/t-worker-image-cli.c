/*
 * t-worker-image-cli.c - `vr-worker segment-image` on bad input: a missing,
 * empty, truncated, corrupt or non-image file, or --raw on an image of the
 * wrong size, is one line on stderr naming the file, exit 1 and no output
 * file; bad usage exits 2.
 */
#include "util-image.h"

struct run {
    int status;
    char err[2048];
};

/* Runs vr-worker segment-image with `args`; stderr captured. */
static struct run seg_image(const char *dir, const char *args)
{
    char bin[512], errf[256];
    struct run r;
    timg_bin(bin, sizeof bin, "vr-worker");
    snprintf(errf, sizeof errf, "%s/stderr", dir);
    r.status = tsh("%s segment-image %s 2>%s >/dev/null", bin, args, errf);
    timg_slurp(errf, r.err, sizeof r.err);
    return r;
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void expect_fail(const char *dir, const char *in, const char *words)
{
    char args[1024], out[512];
    snprintf(out, sizeof out, "%s/out.png", dir);
    snprintf(args, sizeof args, "%s %s", in, out);
    struct run r = seg_image(dir, args);
    cr_assert_eq(r.status, 1, "%s: exit %d, stderr: %s", in, r.status, r.err);
    cr_assert_eq(lines(r.err), 1, "%s: want one line, got: %s", in, r.err);
    cr_assert(strstr(r.err, in), "stderr does not name %s: %s", in, r.err);
    cr_assert(strstr(r.err, words), "want '%s' in: %s", words, r.err);
    cr_assert_neq(access(out, F_OK), 0, "%s: output written despite the error", in);
}

Test(worker_image_cli, bad_inputs_fail_cleanly, .timeout = 60)
{
    char dir[64], p[256];
    timg_tmpdir(dir, sizeof dir);

    snprintf(p, sizeof p, "%s/nope.jpg", dir);
    expect_fail(dir, p, "no such file");

    snprintf(p, sizeof p, "%s/empty.jpg", dir);
    tsh("touch %s", p);
    expect_fail(dir, p, "empty");

    snprintf(p, sizeof p, "%s/readme.png", dir);
    tsh("echo hello > %s", p);
    expect_fail(dir, p, "not a PNG or JPEG");

    snprintf(p, sizeof p, "%s/cut.jpg", dir);
    tsh("head -c 20000 tests/data/people.jpg > %s", p);
    expect_fail(dir, p, "truncated");

    snprintf(p, sizeof p, "%s/flip.png", dir);
    tsh("cp tests/data/image/astronaut-256.png %s && printf '\\377\\377\\377' | "
            "dd of=%s bs=1 seek=40000 conv=notrunc status=none", p, p);
    expect_fail(dir, p, "corrupt");
    tsh("rm -rf %s", dir);
}

Test(worker_image_cli, raw_with_wrong_size_names_both_sizes, .timeout = 60)
{
    char dir[64], args[512];
    timg_tmpdir(dir, sizeof dir);
    snprintf(args, sizeof args, "--raw tests/data/people.jpg %s/out.png", dir);
    struct run r = seg_image(dir, args);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_assert(strstr(r.err, "256x256") && strstr(r.err, "640x480")
              && strstr(r.err, "tests/data/people.jpg"), "%s", r.err);
    snprintf(args, sizeof args, "%s/out.png", dir);
    cr_assert_neq(access(args, F_OK), 0);
    tsh("rm -rf %s", dir);
}

Test(worker_image_cli, bad_usage_exits_2, .timeout = 60)
{
    char dir[64];
    timg_tmpdir(dir, sizeof dir);
    struct run r = seg_image(dir, "tests/data/people.jpg");
    cr_assert_eq(r.status, 2, "one argument: exit %d", r.status);
    r = seg_image(dir, "--layout diagonal tests/data/people.jpg x.png");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "diagonal"), "%s", r.err);
    r = seg_image(dir, "--frobnicate tests/data/people.jpg x.png");
    cr_assert_eq(r.status, 2);
    r = seg_image(dir, "--profile turbo tests/data/people.jpg x.png");
    cr_assert_eq(r.status, 1, "unknown profile is a run-time error: %s", r.err);
    cr_assert(strstr(r.err, "turbo"), "%s", r.err);
    tsh("rm -rf %s", dir);
}

/* `process` defaults to --layout auto; segment-image takes it too (for an
 * image: the file-name tags, then the aspect ratio). */
Test(worker_image_cli, layout_auto_accepted, .timeout = 120)
{
    char dir[64], args[512], out[256];
    timg_tmpdir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/mask.png", dir);
    snprintf(args, sizeof args, "--profile fast --layout auto tests/data/people.jpg %s", out);
    struct run r = seg_image(dir, args);
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    cr_assert_eq(access(out, F_OK), 0);
    tsh("rm -rf %s", dir);
}

/* The mask is always PNG: a .jpg name would get PNG bytes, so it is refused
 * (exit 2, before any work) with a message saying why. */
Test(worker_image_cli, output_must_be_png, .timeout = 60)
{
    char dir[64], args[512], out[256];
    timg_tmpdir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/mask.jpg", dir);
    snprintf(args, sizeof args, "tests/data/people.jpg %s", out);
    struct run r = seg_image(dir, args);
    cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_assert(strstr(r.err, "mask.jpg") && strstr(r.err, ".png"), "%s", r.err);
    cr_assert_neq(access(out, F_OK), 0);
    tsh("rm -rf %s", dir);
}
