/*
 * rq_opts.c - the shared Redis/storage option block (rq_opts.h).
 */
#include "rq_opts.h"

#include "cmdtable.h"
#include "rq.h"

#include <string.h>

int rq_opts_take(struct rq_opts *ro, int o, const char *arg)
{
    vr_err e = { 0 };
    switch (o) {
    case RQ_OPT_REDIS: ro->redis = arg; return 1;
    case RQ_OPT_PASSWORD_FILE: rq_password_file(arg); return 1;
    case RQ_OPT_STORAGE: /* a URL: where chunk outputs go (WebDAV), beside or instead of a DIR */
        if (!url_root_is_url(arg))
            ro->storage = arg;
        else if (!strncmp(arg, "s3://", 5))
            return cli_usage_error("--storage s3://...: not yet (chunk outputs go to an "
                                   "http(s):// WebDAV prefix)");
        else if (url_root_norm(arg, ro->storage_url, sizeof ro->storage_url, &e) < 0)
            return cli_usage_error("--storage: %s", e.msg);
        return 1;
    case RQ_OPT_INPUT_ROOT: /* a URL: a prefix for URL inputs; files stay under the storage root */
        if (!url_root_is_url(arg))
            ro->input_root = arg;
        else if (url_root_norm(arg, ro->input_url_root, sizeof ro->input_url_root, &e) < 0)
            return cli_usage_error("--input-root: %s", e.msg);
        return 1;
    case RQ_OPT_ALLOW_PRIVATE: ro->allow_private = 1; return 1;
    default: return 0;
    }
}

int rq_opts_check(struct rq_opts *ro, int need_storage)
{
    vr_err e = { 0 };
    ro->redis = rq_url_pick(ro->redis);
    if (rq_url_check(ro->redis, &e) < 0) /* a malformed address is bad usage */
        return cli_usage_error("%s", e.msg);
    if (need_storage == RQ_NEED_DIR && !ro->storage)
        return cli_usage_error("--storage DIR is required");
    if (need_storage == RQ_NEED_DIR_OR_URL && !ro->storage && !ro->storage_url[0])
        return cli_usage_error("--storage DIR (or --storage URL) is required");
    return 0;
}
