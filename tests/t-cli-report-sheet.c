/*
 * t-cli-report-sheet.c - the contact sheet in `vrctl report` (issue 39): a
 * real CPU job's page shows frames of its source beside its matte and the
 * matte over the source as one embedded PNG (the page still loads no
 * file), and the files named in
 * Redis are opened only when they are local regular files: a FIFO there
 * (which would hang the decoder) or a missing output gives a line saying
 * why, escaped, and the page is still written; a link in a file's place
 * is not followed.
 */
#include "rq.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

TestSuite(cli_report_sheet, .fini = teardown, .timeout = 180);

/* `vrctl report ID -o <dir>/NAME` (must succeed); the page's text (static). */
static const char *page(const char *id, const char *name)
{
    static char buf[1 << 21];
    char path[400], msg[512];
    snprintf(path, sizeof path, "%s/%s", D.r.dir, name);
    const char *args[] = { "report", id, "-o", path, NULL };
    cr_assert_eq(tdist_vrctl(&D, msg, sizeof msg, args), 0, "%s", msg);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s not written", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

Test(cli_report_sheet, source_beside_matte_as_one_embedded_png)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 1), 0);
    char in[400], out[400], id[64], jk[128], png[400], fifo[400];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 4, 160, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    cr_assert_eq(tdist_watch(&D, id, 90000), 0);

    const char *html = page(id, "a.html");
    const char *img = strstr(html, "<img class=\"sheet\"");
    cr_assert_not_null(img, "no contact sheet in the page");
    const char *src = strstr(img, " src=\"data:image/png;base64,");
    cr_assert_not_null(src, "the sheet is not an embedded PNG");
    cr_assert_null(strstr(src + 1, " src="), "the page loads a file");
    /* the PNG decodes: three 160-wide cells a row, 4 rows (frames 0..30) */
    src += strlen(" src=\"data:image/png;base64,");
    const char *end = strchr(src, '"');
    cr_assert_not_null(end);
    snprintf(png, sizeof png, "%s/sheet.png", D.r.dir);
    char b64[400];
    snprintf(b64, sizeof b64, "%s/sheet.b64", D.r.dir);
    FILE *f = fopen(b64, "w");
    cr_assert_not_null(f);
    fwrite(src, 1, (size_t)(end - src), f);
    fclose(f);
    cr_assert_eq(tsh("base64 -d '%s' > '%s' && ffprobe -v error -show_entries stream=width,height "
                     "-of csv=p=0 '%s' | grep -qx '480,480'", b64, png, png), 0,
                 "the sheet is not a 480x480 PNG (3 x 160 wide, 4 rows of 120)");
    /* the columns are three pictures: their means differ, and the overlay
     * is tinted red where the matte says background */
    for (int col = 0; col < 3; col++)
        cr_assert_eq(tsh("ffmpeg -v error -i '%s' -vf crop=160:480:%d:0,format=gray,signalstats,"
                         "metadata=print:file=- -f null - | grep -o 'YAVG=[0-9.]*' > '%s.%d'",
                         png, 160 * col, png, col), 0);
    cr_assert_eq(tsh("! cmp -s '%s.0' '%s.1' && ! cmp -s '%s.0' '%s.2' && ! cmp -s '%s.1' '%s.2'",
                     png, png, png, png, png, png), 0, "two of the sheet's columns are the same "
                     "picture");
    cr_assert_eq(tsh("ffmpeg -v error -i '%s' -vf crop=160:480:320:0,extractplanes=r,signalstats,"
                     "metadata=print:file=- -f null - | grep -o 'YAVG=[0-9.]*' | head -1 "
                     "| awk -F= '$2 < 96 { exit 1 }'", png), 0,
                     "the overlay column is not tinted red (its red under 96)");

    /* files from Redis: a FIFO input is refused without opening it */
    snprintf(fifo, sizeof fifo, "%s/fifo<b>", D.r.dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    rq_key_job(jk, sizeof jk, id);
    struct rq *q = NULL;
    vr_err e = { 0 };
    static char spec[8192], bad[8192];
    cr_assert_eq(rq_open(D.r.url, 2000, &q, &e), 0, "%s", e.msg);
    cr_assert_gt(rq_hget(q, jk, "spec", spec, sizeof spec, &e), 0, "%s", e.msg);
    rq_free(&q);
    const char *at = strstr(spec, in); /* the job's spec (JSON) names its input */
    cr_assert_not_null(at, "the spec does not name %s", in);
    snprintf(bad, sizeof bad, "%.*s%s%s", (int)(at - spec), spec, fifo, at + strlen(in));
    const char *hs[] = { "HSET", jk, "spec", bad, NULL };
    cr_assert_eq(tredis_cmd(&D.r, hs), 0);
    html = page(id, "b.html");
    const char *no = strstr(html, "No contact sheet");
    cr_assert(no && !strncmp(no, "No contact sheet: the job&#39;s input is not a regular file",
                             58), "a FIFO input was not refused: %.80s", no ? no : "(no line)");
    cr_assert_null(strstr(html, "<b>"), "a path reached the page as markup");

    /* a missing output: said so, the page still written */
    const char *hs2[] = { "HSET", jk, "spec", spec, NULL };
    cr_assert_eq(tredis_cmd(&D.r, hs2), 0);
    cr_assert_eq(unlink(out), 0);
    html = page(id, "c.html");
    cr_assert(strstr(html, "No contact sheet: the job&#39;s output is not there"));
    cr_assert(strstr(html, "Throughput over time"));

    /* a link in the output's place (even to a regular video) is not
     * followed: the file is opened once, by its own name */
    cr_assert_eq(symlink(in, out), 0);
    html = page(id, "d.html");
    cr_assert(strstr(html, "No contact sheet: the job&#39;s output cannot be opened"),
              "a link in the output's place was followed");
}
