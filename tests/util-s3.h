/*
 * util-s3.h - test harness: a real, throwaway S3-compatible server (moto's
 * moto_server, `deploy/install-deps.sh --test` puts it in
 * /opt/vrseg-test/moto; $VR_MOTO_SERVER or one on PATH first) on a free
 * loopback port, with signatures checked: after the first 4 requests
 * (an IAM user, its access key, a policy allowing s3:*, the bucket) moto
 * recomputes every request's SigV4 signature with botocore, AWS's own
 * signer, and answers 403 SignatureDoesNotMatch to a wrong one. Its
 * request log (method, path and query, status) is <dir>/moto.log. The
 * server dies with the test process (PR_SET_PDEATHSIG).
 */
#ifndef VR_UTIL_S3_H
#define VR_UTIL_S3_H

#include <sys/types.h>

struct ts3 {
    pid_t pid;            /* 0 when stopped */
    int port;
    char dir[300];        /* its log and the key's reply */
    char log[320];        /* <dir>/moto.log */
    char endpoint[64];    /* http://127.0.0.1:<port> ($VR_S3_ENDPOINT) */
    char id[64];          /* the access key id and secret moto made */
    char secret[128];
};

/* 1 when a moto_server is installed (where ts3_start looks). */
int ts3_available(void);

/* Starts moto in dir (made if missing) with parts down to min_part bytes
 * allowed (S3's own minimum is 5 MiB), makes the key and `bucket`.
 * Returns 0 or -1 (message on stderr). */
int ts3_start(struct ts3 *s, const char *dir, const char *bucket, long min_part);

/* Exports the endpoint and credentials to this process (and so to what it
 * spawns), path style, us-east-1. */
void ts3_env(const struct ts3 *s);

/* A signed GET (curl --aws-sigv4) of path ("bucket/key", may hold a
 * query) into out (a file; NULL: discarded). Returns the HTTP status, or
 * -1. */
int ts3_get(const struct ts3 *s, const char *path, const char *out);

/* Lines of the request log holding `what` ("POST /b/k?uploads"). */
int ts3_count(const struct ts3 *s, const char *what);

/* Stops it; safe to call twice. */
void ts3_stop(struct ts3 *s);

#endif
