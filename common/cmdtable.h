/*
 * cmdtable.h - subcommands from a table (after git's git.c and redis-cli):
 * the command table of each binary, its help, and the parsing of the
 * numbers users give (the cli_ prefix: the command line).
 *
 * Each binary declares one `struct cli_cmd` array ending in a zeroed entry;
 * cli_main() picks the entry named by argv[1], or the table's default entry
 * when argv[1] is an option, and prints help generated from the table for
 * `--help`, `-h` or `help [CMD]`. `--version` prints the version
 * (common/version.h). `--log-format text|json`, anywhere before a `--`,
 * sets the log format (common/log.h) for every command.
 */
#ifndef VR_CMDTABLE_H
#define VR_CMDTABLE_H

#include <getopt.h>
#include <stdio.h>

enum cli_flags {
    CLI_DEFAULT     = 1 << 1, /* runs when argv[1] is an option or absent */
    CLI_NEEDS_REDIS = 1 << 2, /* talks to Redis: its help gets the --redis option */
};

/* The --redis option's help, printed for CLI_NEEDS_REDIS commands. */
#define CLI_REDIS_HELP                                                                   \
    "  --redis URL        redis://[user[:password]@]host:port[/db] ([::1]:port for IPv6,\n" \
    "                     %XX escapes in user and password) or unix:///path.sock\n"        \
    "                     (default $VR_REDIS, else redis://127.0.0.1:6379);\n"      \
    "                     TLS: README.md, 'Security'\n"             \
    "  --redis-password-file FILE\n"                                                       \
    "                     the password on FILE's first line, kept out of argv and `ps`\n"  \
    "                     (default $VR_REDIS_PASSWORD_FILE)\n"

/* The --log-format option's help; cli_main takes the option out of argv
 * before a command sees it, so every command of every binary has it. */
#define CLI_LOG_HELP                                                                     \
    "  --log-format F     text (default; $VR_LOG_FORMAT) or json: one object a line\n"  \
    "                     (time, level, component, job, chunk, worker, message)\n"  \
    "  --allow-loose-secret  read a password or secret file that others may read\n"  \
    "                     (refused otherwise: chmod 600 it; $VR_ALLOW_LOOSE_SECRET=1)\n"

/* The -y / -n options' help: every command that writes a file the user
 * names has them (storage_outputs_check). Refusing is the default, as
 * ffmpeg does when it cannot ask: nothing is lost to a mistyped name. */
#define CLI_REPLACE_HELP                                                                 \
    "  -y                 replace existing output files (a regular file only: never a\n"  \
    "                     device, FIFO or directory, nor an input; its mode is kept)\n"  \
    "  -n                 never replace one (the default): an existing output is an\n"   \
    "                     error before any work\n"

/* `fn` gets argc/argv with argv[0] set to the command's name, so getopt_long
 * can be used directly. It returns the process exit code. */
struct cli_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    unsigned flags;
    const char *usage;   /* arguments, e.g. "[--model PATH] IN OUT" */
    const char *summary; /* one line */
    const char *help;    /* options explained, one per line; may be NULL */
};

/* Dispatches; returns the exit code for main(). `about` is one line shown
 * at the top of the help. */
int cli_main(const char *prog, const char *about, const struct cli_cmd *cmds,
             int argc, char **argv);

/* `prog --version` prints "prog VERSION" (common/version.h), then calls
 * `extra` (may be NULL) for more lines, such as the libraries a binary
 * runs with. Call before cli_main. */
void cli_version_extra(void (*extra)(FILE *f));

/* Prints the help of one command ("usage: prog name args" + summary + help). */
void cli_cmd_usage(FILE *f, const char *prog, const struct cli_cmd *cmd);

/* The command being run (valid inside fn), for error messages and usage. */
const struct cli_cmd *cli_current(void);
const char *cli_prog(void);
/* The whole table and the `about` line cli_main was given (valid inside
 * fn): what shell completion and man pages are generated from. */
const struct cli_cmd *cli_table(void);
const char *cli_about(void);

/* Prints "prog cmd: <msg>\n" plus "try 'prog cmd --help'" to stderr and
 * returns 2 (the exit code for bad usage). */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "prog cmd: <msg>" as an error (a log object with --log-format
 * json) and returns `code`: the one shape of a command's failures, so
 * every message names the subcommand that failed. */
int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* getopt_long for a command's options, with one error message: an unknown
 * option is refused once, naming the nearest long option when one is
 * close ("unknown option '--profle'; did you mean '--profile'?"), and an
 * option without its argument says so. Returns what getopt_long returns,
 * or '?' after that usage error was printed (the caller returns 2).
 * `shortopts` as getopt's, a leading '+' kept. */
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);

/* The name among `names` (n of them) nearest to `typed` by edit distance,
 * or NULL when none is within a third of its length (at least 1, at most
 * 3 edits): the "did you mean" of unknown commands and options. */
const char *cli_nearest(const char *typed, const char *const *names, int n);

/* ---- numbers from users ----
 * One strict parser for every number an option, an environment variable or
 * a Redis field gives: the whole string must be the number (no "5x", no
 * "1e2" for an integer, no leading blanks, no hex, inf or nan), and it must
 * lie in [lo, hi]. On failure `err` (size n) gets a message naming `what`
 * ("--priority 'abc': not an integer; want -100..100") and -1 is returned. */
int cli_parse_long(const char *what, const char *s, long lo, long hi, long *out,
                   char *err, size_t n);
int cli_parse_double(const char *what, const char *s, double lo, double hi, double *out,
                     char *err, size_t n);

/* The same for an option's argument inside a command: 0 with *out set, or
 * the usage error printed (cli_usage_error) and 2 returned. */
int cli_opt_int(const char *opt, const char *arg, long lo, long hi, int *out);
int cli_opt_long(const char *opt, const char *arg, long lo, long hi, long long *out);
int cli_opt_double(const char *opt, const char *arg, double lo, double hi, double *out);

/* A duration option: a number followed by s, m, h or d (seconds without
 * one: "90", "30m", "7d", "1.5h"), within [0, hi_s] seconds: 0 with *out
 * in seconds, or the usage error printed and 2 returned. */
int cli_opt_duration(const char *opt, const char *arg, double hi_s, double *out);

#endif
