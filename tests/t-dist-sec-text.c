/*
 * t-dist-sec-text.c - bidirectional controls never reach a terminal, a
 * page or a log (issue 41, finding 12). U+202E (right-to-left override)
 * in a file name made `vrctl status` and the HTML report show
 * "in<U+202E>4pm.exe" as "inexe.mp4". A submitter under
 * deploy/redis-users.acl names its input so; status, status --json and
 * report show '?' in its place, as text_strip_controls does for every
 * bidi control (U+202A-U+202E, U+2066-U+2069, U+200E/F, U+061C).
 */
#include "text.h"
#include "util-acl.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tdist D;
static struct tacl A;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

TestSuite(dist_sec_text, .fini = teardown, .timeout = 120);

Test(dist_sec_text, every_bidi_control_is_stripped_and_other_utf8_kept)
{
    static const char *const bidi[] = { "\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac",
                                        "\xe2\x80\xad", "\xe2\x80\xae", "\xe2\x81\xa6",
                                        "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9",
                                        "\xe2\x80\x8e", "\xe2\x80\x8f", "\xd8\x9c" };
    for (size_t i = 0; i < sizeof bidi / sizeof bidi[0]; i++) {
        char s[64];
        snprintf(s, sizeof s, "a%sb", bidi[i]);
        cr_assert_eq(text_bidi_len(s + 1), (int)strlen(bidi[i]));
        text_strip_controls(s);
        cr_assert_str_eq(s, "a?b", "bidi control %zu kept: %s", i, s);
    }
    /* their neighbours are text: an en dash, U+2070, Arabic letters, é */
    char keep[] = "\xe2\x80\x93 \xe2\x81\xb0 \xd8\xa8\xd8\x9b \xc3\xa9";
    text_strip_controls(keep);
    cr_assert_str_eq(keep, "\xe2\x80\x93 \xe2\x81\xb0 \xd8\xa8\xd8\x9b \xc3\xa9");
    cr_assert_eq(text_bidi_len(NULL), 0);
    cr_assert_eq(text_bidi_len("\xe2\x80"), 0);
}

Test(dist_sec_text, a_right_to_left_override_in_a_name_is_shown_as_a_question_mark)
{
    tacl_start(&D, &A);
    tacl_controller(&D, &A, NULL); /* the vrctl user's submit is recorded by a controller */
    char in[400], out[400], id[128], page[400];
    static char buf[65536];
    snprintf(in, sizeof in, "%s/in\xe2\x80\xae" "4pm.exe.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out\xe2\x81\xa6.mkv", D.r.dir);
    snprintf(page, sizeof page, "%s/page.html", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 96, 5, 0), 0);
    cr_assert_eq(tacl_submit(&A, in, out, NULL, id, sizeof id), 0);
    const char *status[] = { "status", id, NULL };
    const char *json[] = { "status", id, "--json", NULL };
    const char *report[] = { "report", id, "-o", page, NULL };
    const char *const *cmds[] = { status, json };
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(tacl_vrctl(A.uv, A.pv, buf, sizeof buf, cmds[i]), 0);
        cr_assert_null(strstr(buf, "\xe2\x80\xae"), "status shows U+202E: %s", buf);
        cr_assert_null(strstr(buf, "\xe2\x81\xa6"), "status shows U+2066: %s", buf);
        cr_assert(strstr(buf, "in?4pm.exe.mp4"), "the input is not shown: %s", buf);
    }
    cr_assert_eq(tacl_vrctl(A.uv, A.pv, buf, sizeof buf, report), 0);
    tslurp(page, buf, sizeof buf);
    cr_assert(buf[0], "no page written");
    cr_assert_null(strstr(buf, "\xe2\x80\xae"), "the report shows U+202E");
    cr_assert_null(strstr(buf, "\xe2\x81\xa6"), "the report shows U+2066");
    cr_assert(strstr(buf, "in?4pm.exe.mp4"), "the report does not show the input");
}
