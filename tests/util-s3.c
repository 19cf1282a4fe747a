/*
 * util-s3.c - a throwaway moto_server with signatures checked (util-s3.h).
 */
#include "util-s3.h"

#include <glob.h>

#include "util-nginx.h"
#include "util-redis.h"

#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The set-up requests moto takes unsigned (INITIAL_NO_AUTH_ACTION_COUNT). */
#define TS3_SETUP 4
#define TS3_IAM "-H 'Authorization: AWS4-HMAC-SHA256 Credential=x/20250101/us-east-1/iam/" \
                "aws4_request, SignedHeaders=host, Signature=0'"

/* moto_server: $VR_MOTO_SERVER, one on PATH, install-deps' venv, or one a
 * pyenv Python holds (images that ship moto there, off a non-login PATH);
 * NULL when none is installed. */
static const char *ts3_binary(void)
{
    static char found[512];
    const char *e = getenv("VR_MOTO_SERVER");
    if (e && *e)
        return e;
    if (tsh("command -v moto_server >/dev/null") == 0)
        return "moto_server";
    if (access("/opt/vrseg-test/moto/bin/moto_server", X_OK) == 0)
        return "/opt/vrseg-test/moto/bin/moto_server";
    glob_t g;
    found[0] = '\0';
    if (glob("/root/.pyenv/versions/*/bin/moto_server", 0, NULL, &g) == 0 && g.gl_pathc > 0)
        snprintf(found, sizeof found, "%s", g.gl_pathv[g.gl_pathc - 1]);
    globfree(&g);
    return found[0] ? found : NULL;
}

int ts3_available(void)
{
    return ts3_binary() != NULL;
}

/* The text of <tag> in file into v. 0 or -1. */
static int ts3_take(const char *file, const char *tag, char *v, size_t n)
{
    char buf[4096], open[64], close[64];
    tslurp(file, buf, sizeof buf);
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    char *s = strstr(buf, open), *e = s ? strstr(s, close) : NULL;
    if (!s || !e || (size_t)(e - s) >= n + strlen(open))
        return -1;
    s += strlen(open);
    snprintf(v, n, "%.*s", (int)(e - s), s);
    return 0;
}

int ts3_start(struct ts3 *s, const char *dir, const char *bucket, long min_part)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->log, sizeof s->log, "%s/moto.log", dir);
    if (tsh("mkdir -p '%s'", dir) != 0 || (s->port = tfree_port("127.0.0.1")) <= 0)
        return -1;
    snprintf(s->endpoint, sizeof s->endpoint, "http://127.0.0.1:%d", s->port);
    const char *bin = ts3_binary();
    if (!bin) {
        fprintf(stderr, "no moto_server (deploy/install-deps.sh --test installs it)\n");
        return -1;
    }
    char port[16], minp[32];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(minp, sizeof minp, "%ld", min_part);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        FILE *f = freopen(s->log, "a", stderr);
        (void)f;
        dup2(2, 1);
        setenv("INITIAL_NO_AUTH_ACTION_COUNT", "4", 1); /* TS3_SETUP */
        setenv("S3_UPLOAD_PART_MIN_SIZE", minp, 1);
        execlp(bin, bin, "-H", "127.0.0.1", "-p", port, (char *)NULL);
        fprintf(stderr, "cannot run %s (deploy/install-deps.sh --test installs moto)\n", bin);
        _exit(127);
    }
    s->pid = pid;
    int up = -1;
    for (int i = 0; i < 300 && up != 0; i++) { /* moto starts in seconds on a busy box */
        tmsleep(100);
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            s->pid = 0;
            tsh("cat '%s' >&2", s->log);
            return -1;
        }
        up = tsh("curl -sf -o /dev/null '%s/moto-api/data.json'", s->endpoint);
    }
    const char *u = s->endpoint;
    if (up != 0 ||
        tsh("curl -sf " TS3_IAM " -d 'Action=CreateUser&UserName=vr&Version=2010-05-08' '%s/' "
            ">/dev/null", u) ||
        tsh("curl -sf " TS3_IAM " -d 'Action=CreateAccessKey&UserName=vr&Version=2010-05-08' "
            "'%s/' > '%s/key.xml'", u, dir) ||
        tsh("curl -sf " TS3_IAM " --data-urlencode 'PolicyDocument={\"Version\":\"2012-10-17\","
            "\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"s3:*\",\"Resource\":\"*\"}]}' "
            "-d 'Action=PutUserPolicy&UserName=vr&PolicyName=s3&Version=2010-05-08' '%s/' "
            ">/dev/null", u) ||
        tsh("curl -sf -X PUT '%s/%s' >/dev/null", u, bucket)) {
        fprintf(stderr, "moto: the set-up failed\n");
        ts3_stop(s);
        return -1;
    }
    char key[320];
    snprintf(key, sizeof key, "%s/key.xml", dir);
    if (ts3_take(key, "AccessKeyId", s->id, sizeof s->id) < 0 ||
        ts3_take(key, "SecretAccessKey", s->secret, sizeof s->secret) < 0) {
        fprintf(stderr, "moto: no access key in its reply\n");
        ts3_stop(s);
        return -1;
    }
    return 0;
}

void ts3_env(const struct ts3 *s)
{
    setenv("VR_S3_ENDPOINT", s->endpoint, 1);
    setenv("AWS_ACCESS_KEY_ID", s->id, 1);
    setenv("AWS_SECRET_ACCESS_KEY", s->secret, 1);
    setenv("AWS_REGION", "us-east-1", 1);
}

int ts3_get(const struct ts3 *s, const char *path, const char *out)
{
    char code[16] = "";
    if (tsh_out(code, sizeof code, "curl -s -o '%s' -w '%%{http_code}' --aws-sigv4 "
                "aws:amz:us-east-1:s3 --user '%s:%s' -H 'x-amz-content-sha256: "
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' '%s/%s'",
                out ? out : "/dev/null", s->id, s->secret, s->endpoint, path) != 0)
        return -1;
    return atoi(code);
}

int ts3_count(const struct ts3 *s, const char *what)
{
    return tlog_count(s->log, what);
}

void ts3_stop(struct ts3 *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
    }
    s->pid = 0;
}
