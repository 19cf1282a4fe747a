/*
 * rq_opts.h - the options every command that reaches the fleet takes: the
 * Redis address and its password file, and for the daemons the storage
 * root, the input root and the leave to reach private storage addresses.
 * One block, so `--redis` means the same in vrctl, vr-controller and
 * vr-worker; each command adds its own options beside it.
 */
#ifndef VR_RQ_OPTS_H
#define VR_RQ_OPTS_H

#include "url_root.h"

#include <getopt.h>

/* getopt values above any short option's character */
enum {
    RQ_OPT_REDIS = 0x1000,
    RQ_OPT_PASSWORD_FILE,
    RQ_OPT_STORAGE,
    RQ_OPT_INPUT_ROOT,
    RQ_OPT_ALLOW_PRIVATE,
};

/* Entries for a command's struct option table. */
#define RQ_LONGOPTS_REDIS                                                  \
    { "redis", required_argument, 0, RQ_OPT_REDIS },                       \
    { "redis-password-file", required_argument, 0, RQ_OPT_PASSWORD_FILE }
#define RQ_LONGOPTS_STORAGE                                                \
    { "storage", required_argument, 0, RQ_OPT_STORAGE },                   \
    { "input-root", required_argument, 0, RQ_OPT_INPUT_ROOT },             \
    { "storage-allow-private", no_argument, 0, RQ_OPT_ALLOW_PRIVATE }

struct rq_opts {
    const char *redis;       /* --redis (argv's), rq_url_pick'd by rq_opts_check */
    const char *storage;     /* --storage DIR (argv's) */
    char storage_url[URL_ROOT_MAX]; /* --storage URL, url_root_norm'd: chunk outputs go by
                                     * HTTP under it (WebDAV); "": on the storage DIR */
    const char *input_root;  /* --input-root DIR (argv's); NULL: the storage root */
    char input_url_root[URL_ROOT_MAX]; /* --input-root URL, url_root_norm'd; "": none */
    int allow_private;       /* --storage-allow-private: the caller tells http_io */
};

/* Takes option `o` (cli_getopt's value) with its argument when it is one
 * of the block's: 1 taken, 0 not one of them, 2 a usage error printed.
 * --redis-password-file is applied at once (rq_password_file). */
int rq_opts_take(struct rq_opts *ro, int o, const char *arg);

/* After the options: picks the address (rq_url_pick) and refuses a
 * malformed one, and a missing --storage before anything starts:
 * need_storage RQ_NEED_DIR asks for a directory, RQ_NEED_DIR_OR_URL for a
 * directory or a URL. 0, or 2 with the usage error printed. */
enum { RQ_NEED_NONE, RQ_NEED_DIR, RQ_NEED_DIR_OR_URL };
int rq_opts_check(struct rq_opts *ro, int need_storage);

#endif
