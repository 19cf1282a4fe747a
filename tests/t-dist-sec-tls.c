/*
 * t-dist-sec-tls.c - Redis over TLS through stunnel, README.md's recipe (hiredis
 * 0.14, Debian 12's, has no TLS, so rediss:// is refused and a tunnel
 * carries it): a self-signed certificate made with openssl, redis-server on
 * a loopback port, an stunnel server in front of it that speaks only TLS,
 * an stunnel client that checks the server's certificate and name, and a
 * real CPU job whose controller, worker and vrctl reach Redis through the
 * client's port. Skipped, saying why, only where stunnel is not installed.
 */
#include "rq.h"
#include "util-redis.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct tdist D;
static pid_t Tun[2];

static void teardown(void)
{
    for (int i = 0; i < 2; i++)
        if (Tun[i] > 0) {
            kill(Tun[i], SIGTERM);
            waitpid(Tun[i], NULL, 0);
            Tun[i] = 0;
        }
    tdist_stop(&D, 0);
}

TestSuite(dist_sec_tls, .fini = teardown, .timeout = 150);

/* stunnel with config file `conf`, in the foreground, dying with the test. */
static pid_t stunnel_start(const char *conf, const char *log)
{
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        FILE *f = freopen(log, "a", stdout);
        (void)f;
        dup2(1, 2);
        execlp("stunnel", "stunnel", conf, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* PING through url: 0 when it answers within 2 s. */
static int ping(const char *url)
{
    struct rq *q = NULL;
    vr_err e = { 0 };
    int rc = rq_open(url, 2000, &q, &e);
    redisReply *r = rc == 0 ? rq_cmd(q, &e, "PING") : NULL;
    rc = r ? 0 : -1;
    freeReplyObject(r);
    rq_free(&q);
    return rc;
}

Test(dist_sec_tls, a_job_through_an_stunnel_tunnel)
{
    if (tsh("command -v stunnel >/dev/null && command -v openssl >/dev/null") != 0) {
        /* info: Criterion counts a warning as a failed run */
        cr_log_info("stunnel4 or openssl is not installed (deploy/install-deps.sh installs "
                    "them): the TLS tunnel recipe is not tested");
        cr_skip_test("stunnel4 or openssl not installed");
    }
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    const char *dir = D.r.dir;
    int rport = tredis_tcp(&D.r, "127.0.0.1");
    int sport = tfree_port("127.0.0.1"), cport = tfree_port("127.0.0.1");
    cr_assert(rport > 0 && sport > 0 && cport > 0 && sport != cport);

    /* README.md, "Security": the certificate, the server side (on the Redis
     * host), the client side (on each node) */
    cr_assert_eq(tsh("cd '%s' && openssl req -x509 -newkey rsa:2048 -nodes -days 2 "
                     "-subj /CN=redis.test -addext subjectAltName=DNS:redis.test "
                     "-keyout redis-tls.key -out redis-tls.crt 2>/dev/null && "
                     "chmod 600 redis-tls.key", dir), 0);
    cr_assert_eq(tsh("cat > '%s/server.conf' <<EOF\n"
                     "foreground = yes\npid =\n"
                     "[redis-tls]\naccept = 127.0.0.1:%d\nconnect = 127.0.0.1:%d\n"
                     "cert = %s/redis-tls.crt\nkey = %s/redis-tls.key\n"
                     "EOF", dir, sport, rport, dir, dir), 0);
    cr_assert_eq(tsh("cat > '%s/client.conf' <<EOF\n"
                     "foreground = yes\npid =\n"
                     "[redis]\nclient = yes\naccept = 127.0.0.1:%d\nconnect = 127.0.0.1:%d\n"
                     "verifyChain = yes\nCAfile = %s/redis-tls.crt\ncheckHost = redis.test\n"
                     "EOF", dir, cport, sport, dir), 0);
    char conf[400], log[400], url[64], plain[64];
    snprintf(log, sizeof log, "%s/stunnel.log", dir);
    snprintf(conf, sizeof conf, "%s/server.conf", dir);
    Tun[0] = stunnel_start(conf, log);
    snprintf(conf, sizeof conf, "%s/client.conf", dir);
    Tun[1] = stunnel_start(conf, log);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", cport);
    snprintf(plain, sizeof plain, "redis://127.0.0.1:%d", sport);
    int up = -1;
    for (int i = 0; i < 100 && up != 0; i++) {
        struct timespec ts = { 0, 50000000 };
        nanosleep(&ts, NULL);
        up = ping(url);
    }
    if (up != 0)
        tsh("cat '%s' >&2", log);
    cr_assert_eq(up, 0, "no PING through the tunnel");
    cr_assert_neq(ping(plain), 0, "the TLS port answered plain Redis");

    /* the whole system through the tunnel */
    snprintf(D.r.url, sizeof D.r.url, "%s", url);
    cr_assert_gt(tdist_controller(&D), 0);
    cr_assert_gt(tdist_worker(&D), 0);
    char in[400], out[400], id[128];
    snprintf(in, sizeof in, "%s/in.mp4", dir);
    snprintf(out, sizeof out, "%s/out.mkv", dir);
    cr_assert_eq(tclip_make(in, 3, 160, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    int rc = tdist_watch(&D, id, 90000);
    if (rc)
        tsh("tail -30 '%s' >&2; cat '%s' >&2", D.log, log);
    cr_assert_eq(rc, 0, "the job did not complete through the tunnel");
    char n[64];
    tsh_out(n, sizeof n, "ffprobe -v error -count_packets -select_streams v "
            "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", out);
    cr_assert_eq(atoi(n), 30);
    /* and the tunnel carried it: the client side logged its connections */
    cr_assert_eq(tsh("grep -q 'Service \\[redis\\] accepted connection' '%s'", log), 0);
}
