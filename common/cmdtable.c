/*
 * cmdtable.c - table-driven subcommand dispatch and generated help (see
 * cmdtable.h).
 */
#include "cmdtable.h"

#include "log.h"
#include "version.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const struct cli_cmd *cli_cmd_now;
static const char *cli_prog_now = "vrseg";
static const struct cli_cmd *cli_table_now; /* the table cli_main dispatches from */
static const char *cli_about_now = "";
static void (*cli_version_more)(FILE *f);

void cli_version_extra(void (*extra)(FILE *f)) { cli_version_more = extra; }

const struct cli_cmd *cli_current(void) { return cli_cmd_now; }
const char *cli_prog(void) { return cli_prog_now; }

static void cli_usage_all(FILE *f, const char *prog, const char *about,
                          const struct cli_cmd *cmds)
{
    fprintf(f, "%s - %s\n\nusage: %s <command> [options]\n\ncommands:\n",
            prog, about, prog);
    for (const struct cli_cmd *c = cmds; c->name; c++)
        fprintf(f, "  %-16s %s\n", c->name, c->summary);
    fprintf(f, "\nevery command:\n" CLI_LOG_HELP);
    fprintf(f, "\n'%s help <command>' or '%s <command> --help' shows a "
               "command's options; '%s --version' the version.\n", prog, prog, prog);
}

void cli_cmd_usage(FILE *f, const char *prog, const struct cli_cmd *cmd)
{
    fprintf(f, "usage: %s %s %s\n\n%s\n", prog, cmd->name,
            cmd->usage ? cmd->usage : "", cmd->summary);
    fprintf(f, "\n");
    if (cmd->flags & CLI_NEEDS_REDIS)
        fputs(CLI_REDIS_HELP, f);
    if (cmd->help)
        fputs(cmd->help, f);
    fputs(CLI_LOG_HELP, f);
}

static const struct cli_cmd *cli_find(const struct cli_cmd *cmds, const char *name)
{
    for (const struct cli_cmd *c = cmds; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/* "prog: unknown command 'runn'; did you mean 'run'?" and the list of
 * commands; returns 2. */
static int cli_unknown_command(const char *prog, const struct cli_cmd *cmds, const char *typed)
{
    const char *names[64] = { 0 };
    int n = 0;
    for (const struct cli_cmd *c = cmds; c->name && n < 64; c++)
        names[n++] = c->name;
    const char *near = cli_nearest(typed, names, n);
    fprintf(stderr, "%s: unknown command '%s'", prog, typed);
    if (near)
        fprintf(stderr, "; did you mean '%s'?", near);
    fprintf(stderr, "\ncommands:");
    for (int i = 0; i < n; i++)
        fprintf(stderr, " %s", names[i]);
    fprintf(stderr, "\n'%s --help' says what each does\n", prog);
    return 2;
}

static int cli_run(const char *prog, const struct cli_cmd *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_cmd_usage(stdout, prog, c);
            return 0;
        }
    }
    cli_cmd_now = c;
    argv[0] = (char *)c->name;
    return c->fn(argc, argv);
}

/* Takes `--log-format F` / `--log-format=F` and `--allow-loose-secret` out
 * of argv wherever they stand before a `--` (before the command or among
 * its options: every command has them), sets the log format, and exports
 * both (VR_LOG_FORMAT, VR_ALLOW_LOOSE_SECRET, which storage_read_secret
 * reads) so the processes this one starts (vrctl run's, serve --gpu all's)
 * do alike. Returns 0, or 2 after a usage message. */
static int cli_log_format(const char *prog, int *argc, char **argv)
{
    int k = 1;
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--")) {
            while (i < *argc)
                argv[k++] = argv[i++];
            break;
        }
        if (!strcmp(argv[i], "--allow-loose-secret")) {
            setenv("VR_ALLOW_LOOSE_SECRET", "1", 1);
            continue;
        }
        if (!strcmp(argv[i], "--log-format")) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "%s: --log-format needs text or json\n", prog);
                return 2;
            }
            v = argv[++i];
        } else if (!strncmp(argv[i], "--log-format=", 13)) {
            v = argv[i] + 13;
        } else {
            argv[k++] = argv[i];
            continue;
        }
        if (log_set_format(v) < 0) {
            fprintf(stderr, "%s: --log-format takes text or json, not '%s'\n", prog, v);
            return 2;
        }
        setenv("VR_LOG_FORMAT", v, 1);
    }
    *argc = k;
    argv[k] = NULL;
    return 0;
}

int cli_main(const char *prog, const char *about, const struct cli_cmd *cmds,
             int argc, char **argv)
{
    cli_prog_now = prog;
    cli_table_now = cmds;
    cli_about_now = about;
    log_init(prog);
    if (cli_log_format(prog, &argc, argv))
        return 2;
    const struct cli_cmd *dflt = NULL;
    for (const struct cli_cmd *c = cmds; c->name; c++)
        if (c->flags & CLI_DEFAULT)
            dflt = c;

    if (argc < 2) {
        if (dflt)
            return cli_run(prog, dflt, argc, argv);
        cli_usage_all(stderr, prog, about, cmds);
        return 2;
    }
    const char *a = argv[1];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        cli_usage_all(stdout, prog, about, cmds);
        return 0;
    }
    if (strcmp(a, "--version") == 0) {
        printf("%s %s\n", prog, vr_version());
        if (cli_version_more)
            cli_version_more(stdout);
        return 0;
    }
    if (strcmp(a, "help") == 0) {
        if (argc < 3) {
            cli_usage_all(stdout, prog, about, cmds);
            return 0;
        }
        const struct cli_cmd *c = cli_find(cmds, argv[2]);
        if (!c)
            return cli_unknown_command(prog, cmds, argv[2]);
        cli_cmd_usage(stdout, prog, c);
        return 0;
    }
    if (a[0] == '-' && dflt)
        return cli_run(prog, dflt, argc, argv);
    const struct cli_cmd *c = cli_find(cmds, a);
    if (!c)
        return cli_unknown_command(prog, cmds, a);
    return cli_run(prog, c, argc - 1, argv + 1);
}

int cli_usage_error(const char *fmt, ...)
{
    const char *name = cli_cmd_now ? cli_cmd_now->name : "";
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s %s: %s\ntry '%s %s --help'\n", cli_prog_now, name, msg,
            cli_prog_now, name);
    return 2;
}

int cli_fail(int code, const char *fmt, ...)
{
    const char *name = cli_cmd_now ? cli_cmd_now->name : NULL;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_say(LOG_ERROR, "%s%s%s: %s\n", cli_prog_now, name ? " " : "", name ? name : "", msg);
    return code;
}

/* ---- options ---- */

/* Levenshtein distance of a and b, names of at most 63 bytes (longer ones
 * are never near). */
static int cli_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    int row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *cli_nearest(const char *typed, const char *const *names, int n)
{
    int len = (int)strlen(typed), most = len / 3;
    most = most < 1 ? 1 : most > 3 ? 3 : most;
    const char *best = NULL;
    int best_d = most + 1;
    for (int i = 0; i < n; i++) {
        int d = cli_distance(typed, names[i]);
        if (d < best_d)
            best = names[i], best_d = d;
    }
    return best;
}

/* The option as typed, for messages: "--name" (without "=value") or "-c". */
static void cli_option_typed(char **argv, char *out, size_t n)
{
    const char *arg = optind > 1 ? argv[optind - 1] : "";
    if (!strncmp(arg, "--", 2))
        snprintf(out, n, "%.*s", (int)strcspn(arg, "="), arg);
    else
        snprintf(out, n, "-%c", optopt ? optopt : '?');
}

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
    char want[128]; /* ':' first: a missing argument returns ':', not '?' */
    int plus = shortopts[0] == '+';
    snprintf(want, sizeof want, "%s:%s", plus ? "+" : "", shortopts + plus);
    opterr = 0;
    int c = getopt_long(argc, argv, want, longopts, NULL);
    if (c != '?' && c != ':')
        return c;
    char typed[64];
    cli_option_typed(argv, typed, sizeof typed);
    if (c == ':') {
        cli_usage_error("option '%s' needs an argument", typed);
        return '?';
    }
    if (optopt && !strncmp(typed, "--", 2)) {
        cli_usage_error("option '%s' takes no argument", typed);
        return '?';
    }
    const char *names[64] = { 0 };
    int n = 0;
    for (const struct option *o = longopts; o && o->name && n < 64; o++)
        names[n++] = o->name;
    const char *near = !strncmp(typed, "--", 2) ? cli_nearest(typed + 2, names, n) : NULL;
    if (near)
        cli_usage_error("unknown option '%s'; did you mean '--%s'?", typed, near);
    else
        cli_usage_error("unknown option '%s'", typed);
    return '?';
}

/* ---- numbers ---- */

/* Digits with an optional sign, and for reals a point and an exponent:
 * what strtol/strtod would also take (blanks, hex, inf, nan) is refused. */
static int cli_number_chars(const char *s, int real)
{
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (!isdigit((unsigned char)*p) && !(real && *p == '.' && isdigit((unsigned char)p[1])))
        return 0;
    for (; *p; p++)
        if (!isdigit((unsigned char)*p) && !(real && strchr(".eE+-", *p)))
            return 0;
    return 1;
}

int cli_parse_long(const char *what, const char *s, long lo, long hi, long *out,
                   char *err, size_t n)
{
    char *end;
    errno = 0;
    long v = s && cli_number_chars(s, 0) ? strtol(s, &end, 10) : 0;
    if (!s || !cli_number_chars(s, 0) || *end || errno) {
        snprintf(err, n, "%s '%s': not a whole number; want %ld..%ld", what, s ? s : "",
                 lo, hi);
        return -1;
    }
    if (v < lo || v > hi) {
        snprintf(err, n, "%s %ld: out of range; want %ld..%ld", what, v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_double(const char *what, const char *s, double lo, double hi, double *out,
                     char *err, size_t n)
{
    char *end;
    errno = 0;
    double v = s && cli_number_chars(s, 1) ? strtod(s, &end) : 0;
    if (!s || !cli_number_chars(s, 1) || *end || errno) {
        snprintf(err, n, "%s '%s': not a number; want %g..%g", what, s ? s : "", lo, hi);
        return -1;
    }
    if (!(v >= lo && v <= hi)) {
        snprintf(err, n, "%s %s: out of range; want %g..%g", what, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_opt_long(const char *opt, const char *arg, long lo, long hi, long long *out)
{
    char msg[256];
    long v;
    if (cli_parse_long(opt, arg, lo, hi, &v, msg, sizeof msg) < 0)
        return cli_usage_error("%s", msg);
    *out = v;
    return 0;
}

int cli_opt_int(const char *opt, const char *arg, long lo, long hi, int *out)
{
    long long v;
    int rc = cli_opt_long(opt, arg, lo, hi, &v);
    if (rc == 0)
        *out = (int)v;
    return rc;
}

int cli_opt_duration(const char *opt, const char *arg, double hi_s, double *out)
{
    static const struct { char unit; double s; } units[] = {
        { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
    char num[64], msg[256];
    size_t len = arg ? strlen(arg) : 0;
    double mul = 1;
    if (len > 1 && len < sizeof num)
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (arg[len - 1] == units[i].unit) {
                mul = units[i].s;
                len--;
            }
    snprintf(num, sizeof num, "%.*s", (int)(len < sizeof num ? len : 0), arg ? arg : "");
    double v;
    if (cli_parse_double(opt, num, 0, hi_s / mul, &v, msg, sizeof msg) < 0)
        return cli_usage_error("%s '%s': want a duration such as 90s, 30m, 12h or 7d (at most "
                               "%.0f days)", opt, arg ? arg : "", hi_s / 86400);
    *out = v * mul;
    return 0;
}

int cli_opt_double(const char *opt, const char *arg, double lo, double hi, double *out)
{
    char msg[256];
    if (cli_parse_double(opt, arg, lo, hi, out, msg, sizeof msg) < 0)
        return cli_usage_error("%s", msg);
    return 0;
}

const struct cli_cmd *cli_table(void)
{
    return cli_table_now;
}

const char *cli_about(void)
{
    return cli_about_now;
}
