/*
 * cmd_docs.c - `vrctl completion bash|zsh` and `vrctl man [CMD|--list]`:
 * shell completion and man pages generated from the command table
 * (cli_table()), as the help is, so a command or an option added to the
 * table is completed and documented with nothing else to edit. A command's
 * options are the "--word" and "-x" tokens of its usage and help text,
 * with --redis and --redis-password-file for the commands that talk to
 * Redis, and --log-format and --help for all.
 */
#include "vrctl.h"

#include "cmdtable.h"
#include "version.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DOCS_OPTS = 64 };

/* ---- options from the text ---- */

static int docs_has(char opts[][40], int n, const char *o)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(opts[i], o))
            return 1;
    return 0;
}

/* The option tokens of `text` added to opts (n so far, at most DOCS_OPTS):
 * "--word-word" and "-x" (a dash and one letter after a blank or '[' and
 * before a blank, ']' or '|'). With `heads`, only those that start a line
 * after an indent of two (an option's line): help text names other binaries' options too ("as
 * vr-controller --keep-jobs"). */
static int docs_scan(const char *text, int heads, char opts[][40], int n)
{
    for (const char *p = text; p && *p && n < DOCS_OPTS; p++) {
        if (*p != '-' || (p > text && !strchr(" [(|\n", p[-1])))
            continue;
        if (heads) {
            const char *b = p;
            while (b > text && b[-1] == ' ')
                b--;
            if (p - b != 2 || (b > text && b[-1] != '\n')) /* "  --opt ARG  what" */
                continue;
        }
        char o[40];
        size_t k = 0;
        if (p[1] == '-' && islower((unsigned char)p[2])) {
            o[k++] = '-';
            o[k++] = '-';
            for (const char *q = p + 2; (islower((unsigned char)*q) || isdigit((unsigned char)*q) ||
                                         *q == '-') && k + 1 < sizeof o; q++)
                o[k++] = *q;
            while (k > 2 && o[k - 1] == '-')
                k--;
        } else if (isalpha((unsigned char)p[1]) && (!p[2] || strchr(" ]|,\n", p[2]))) {
            o[k++] = '-';
            o[k++] = p[1];
        }
        o[k] = '\0';
        if (k >= 2 && strcmp(o, "--") && !docs_has(opts, n, o))
            snprintf(opts[n++], sizeof opts[0], "%s", o);
    }
    return n;
}

/* Every option of command c, into opts; returns the count. */
static int docs_options(const struct cli_cmd *c, char opts[][40])
{
    int n = docs_scan(c->usage, 0, opts, 0);
    n = docs_scan(c->help, 1, opts, n);
    if (c->flags & CLI_NEEDS_REDIS)
        n = docs_scan(CLI_REDIS_HELP, 1, opts, n);
    n = docs_scan(CLI_LOG_HELP, 1, opts, n);
    if (n < DOCS_OPTS && !docs_has(opts, n, "--help"))
        snprintf(opts[n++], sizeof opts[0], "--help");
    return n;
}

/* ---- completion ---- */

/* The shell's `case` arms, one a command: "    NAME) opts=<open>--a --b<close> ;;"
 * (bash a string, zsh an array). */
static void docs_cases(FILE *f, const struct cli_cmd *cmds, const char *open, const char *close)
{
    for (const struct cli_cmd *c = cmds; c->name; c++) {
        char opts[DOCS_OPTS][40];
        int n = docs_options(c, opts);
        fprintf(f, "    %s) opts=%s", c->name, open);
        for (int i = 0; i < n; i++)
            fprintf(f, "%s%s", i ? " " : "", opts[i]);
        fprintf(f, "%s ;;\n", close);
    }
}

static void docs_bash(FILE *f, const char *prog, const struct cli_cmd *cmds)
{
    fprintf(f, "# bash completion for %s, generated from its command table by\n"
            "# `%s completion bash`: source it, or put it in\n"
            "# ~/.local/share/bash-completion/completions/%s\n", prog, prog, prog);
    fprintf(f, "_%s() {\n    local cur=\"${COMP_WORDS[COMP_CWORD]}\" opts=\n", prog);
    fprintf(f, "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n        COMPREPLY=($(compgen -W \"");
    for (const struct cli_cmd *c = cmds; c->name; c++)
        fprintf(f, "%s ", c->name);
    fprintf(f, "help --help --version\" -- \"$cur\"))\n        return\n    fi\n");
    fprintf(f, "    case \"${COMP_WORDS[1]}\" in\n");
    docs_cases(f, cmds, "\"", "\"");
    fprintf(f, "    help) COMPREPLY=($(compgen -W \"");
    for (const struct cli_cmd *c = cmds; c->name; c++)
        fprintf(f, "%s ", c->name);
    fprintf(f, "\" -- \"$cur\")); return ;;\n    esac\n");
    fprintf(f, "    # options here; files and directories by bash's default (-o default)\n"
            "    [[ \"$cur\" == -* ]] && COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n}\n");
    fprintf(f, "complete -o default -F _%s %s\n", prog, prog);
}

/* A summary in single quotes for zsh: ' as '\'' */
static void docs_zsh_quoted(FILE *f, const char *s)
{
    for (; *s; s++)
        fputs(*s == '\'' ? "'\\''" : (char[]){ *s, 0 }, f);
}

static void docs_zsh(FILE *f, const char *prog, const struct cli_cmd *cmds)
{
    fprintf(f, "#compdef %s\n# zsh completion for %s, generated from its command table by\n"
            "# `%s completion zsh`: save it as _%s in a directory of $fpath\n", prog, prog, prog,
            prog);
    fprintf(f, "_%s() {\n    local -a cmds opts\n    cmds=(\n", prog);
    for (const struct cli_cmd *c = cmds; c->name; c++) {
        fprintf(f, "        '%s:", c->name);
        docs_zsh_quoted(f, c->summary);
        fprintf(f, "'\n");
    }
    fprintf(f, "    )\n    if (( CURRENT == 2 )); then\n        _describe 'command' cmds\n"
            "        return\n    fi\n    case $words[2] in\n");
    docs_cases(f, cmds, "(", ")");
    fprintf(f, "    esac\n    if [[ $PREFIX == -* ]]; then\n        compadd -- $opts\n"
            "    else\n        _files\n    fi\n}\n_%s \"$@\"\n", prog);
}

int cmd_completion(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "bash") && strcmp(argv[1], "zsh")))
        return cli_usage_error("which shell? bash or zsh");
    if (!strcmp(argv[1], "bash"))
        docs_bash(stdout, cli_prog(), cli_table());
    else
        docs_zsh(stdout, cli_prog(), cli_table());
    return 0;
}

/* ---- man pages ---- */

/* Text as troff reads it: backslashes as \e, a line's leading '.' or '\''
 * guarded with \&, a dash as \- (so it is no hyphen). */
static void docs_roff(FILE *f, const char *s)
{
    int bol = 1;
    for (; s && *s; s++) {
        if (bol && (*s == '.' || *s == '\''))
            fputs("\\&", f);
        if (*s == '\\')
            fputs("\\e", f);
        else if (*s == '-')
            fputs("\\-", f);
        else
            fputc(*s, f);
        bol = *s == '\n';
    }
}

static void docs_upper(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s == '-' ? '_' : toupper((unsigned char)*s), f);
}

static void docs_man_cmd(FILE *f, const char *prog, const struct cli_cmd *c)
{
    fputs(".TH ", f);
    docs_upper(f, prog);
    fputc('-', f);
    docs_upper(f, c->name);
    fprintf(f, " 1 \"\" \"vrseg %s\" \"vrseg manual\"\n.SH NAME\n%s\\-%s \\- ", vr_version(),
            prog, c->name);
    docs_roff(f, c->summary);
    fprintf(f, "\n.SH SYNOPSIS\n.nf\n.B %s %s\n", prog, c->name);
    docs_roff(f, c->usage);
    fputs("\n.fi\n.SH DESCRIPTION\n", f);
    docs_roff(f, c->summary);
    fputs(".\n", f);
    if (c->help || (c->flags & CLI_NEEDS_REDIS)) {
        fputs(".SH OPTIONS\n.nf\n", f);
        docs_roff(f, c->help);
        if (c->flags & CLI_NEEDS_REDIS)
            docs_roff(f, CLI_REDIS_HELP);
        docs_roff(f, CLI_LOG_HELP);
        fputs(".fi\n", f);
    }
    fprintf(f, ".SH SEE ALSO\n.BR %s (1)\n", prog);
}

static void docs_man_all(FILE *f, const char *prog, const char *about,
                         const struct cli_cmd *cmds)
{
    fputs(".TH ", f);
    docs_upper(f, prog);
    fprintf(f, " 1 \"\" \"vrseg %s\" \"vrseg manual\"\n.SH NAME\n%s \\- ", vr_version(), prog);
    docs_roff(f, about);
    fprintf(f, "\n.SH SYNOPSIS\n.B %s\n.I command\n[options]\n.br\n.B %s help\n.I command\n"
            ".SH COMMANDS\n", prog, prog);
    for (const struct cli_cmd *c = cmds; c->name; c++) {
        fprintf(f, ".TP\n.B %s\n", c->name);
        docs_roff(f, c->summary);
        fprintf(f, "\n(%s\\-%s(1))\n", prog, c->name);
    }
    fprintf(f, ".SH OPTIONS\n.nf\n");
    docs_roff(f, CLI_LOG_HELP);
    fprintf(f, ".fi\n.SH SEE ALSO\n");
    for (const struct cli_cmd *c = cmds; c->name; c++)
        fprintf(f, ".BR %s\\-%s (1)%s\n", prog, c->name, c[1].name ? "," : "");
}

int cmd_man(int argc, char **argv)
{
    const struct cli_cmd *cmds = cli_table();
    if (argc > 2)
        return cli_usage_error("one command at most");
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (const struct cli_cmd *c = cmds; c->name; c++)
            printf("%s\n", c->name);
        return 0;
    }
    if (argc == 1) {
        docs_man_all(stdout, cli_prog(), cli_about(), cmds);
        return 0;
    }
    for (const struct cli_cmd *c = cmds; c->name; c++)
        if (!strcmp(c->name, argv[1])) {
            docs_man_cmd(stdout, cli_prog(), c);
            return 0;
        }
    return cli_usage_error("no command '%s' (vrctl man --list)", argv[1]);
}
