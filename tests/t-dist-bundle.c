/*
 * t-dist-bundle.c - `make bundle`'s tree (deploy/bundle.sh, its tarball left
 * out: BUNDLE_TAR=0) holds what an operator needs besides the binaries -
 * README, the Redis ACL file and its check, the Grafana dashboard,
 * Prometheus's alerts, the systemd units - and runs from another
 * directory: vrctl and vr-worker answer --help, and vr-worker processes a
 * small clip with the bundle's own model, its libraries from lib/.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char T[64];

static void setup(void)
{
    snprintf(T, sizeof T, "/tmp/vrtest-bundle-XXXXXX");
    cr_assert_not_null(mkdtemp(T));
}

static void teardown(void)
{
    if (T[0])
        tsh("rm -rf '%s'", T);
}

TestSuite(dist_bundle, .init = setup, .fini = teardown, .timeout = 600);

static const char *bindir(void)
{
    const char *d = getenv("VR_BIN_DIR");
    return d && *d ? d : "bin";
}

Test(dist_bundle, holds_readme_and_deploy_and_runs_from_elsewhere)
{
    char bin[4096];
    cr_assert_not_null(realpath(bindir(), bin));
    static char msg[16384];
    int rc = tsh_out(msg, sizeof msg, "DIST='%s/dist' BUNDLE_TAR=0 deploy/bundle.sh '%s' 2>&1", T,
                     bin);
    cr_assert_eq(rc, 0, "bundle.sh: %s", msg);
    static const char *const want[] = {
        "README.md", "deploy/redis-users.acl", "deploy/redis-users.md", "deploy/check-redis.sh",
        "deploy/grafana/vrseg-dashboard.json", "deploy/prometheus/vrseg-alerts.yml",
        "deploy/systemd/vr-controller.service", "deploy/systemd/vr-worker@.service",
        "systemd/vr-controller.service", "models", "bin/vrctl", "bin/vr-worker",
        "bin/vr-controller", NULL,
    };
    for (int i = 0; want[i]; i++)
        cr_expect_eq(tsh("test -e '%s/dist/vrseg/%s'", T, want[i]), 0, "the bundle lacks %s",
                     want[i]);
    cr_assert_eq(tsh("cmp -s README.md '%s/dist/vrseg/README.md'", T), 0);

    /* from another directory, with nothing of the source tree at hand */
    char elsewhere[128], clip[160];
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", T);
    snprintf(clip, sizeof clip, "%s/in.mp4", elsewhere);
    cr_assert_eq(tsh("mkdir -p '%s'", elsewhere), 0);
    cr_assert_eq(tclip_make(clip, 1, 160, 5, 0), 0);
    rc = tsh_out(msg, sizeof msg, "cd '%s' && env -u VR_BIN_DIR ../dist/vrseg/bin/vrctl --help 2>&1",
                 elsewhere);
    cr_assert_eq(rc, 0, "%s", msg);
    cr_assert(strstr(msg, "submit"), "%s", msg);
    rc = tsh_out(msg, sizeof msg, "cd '%s' && ../dist/vrseg/bin/vr-worker --help 2>&1", elsewhere);
    cr_assert_eq(rc, 0, "%s", msg);
    rc = tsh_out(msg, sizeof msg, "cd '%s' && ../dist/vrseg/bin/vr-worker process in.mp4 -o "
                 "matte.mkv --cpu --profile fast 2>&1", elsewhere);
    cr_assert_eq(rc, 0, "a job from the bundle failed: %s", msg);
    cr_assert_eq(tsh("test -s '%s/matte.mkv'", elsewhere), 0);
    /* its libraries are the bundle's own */
    cr_assert_eq(tsh("ldd '%s/dist/vrseg/bin/vr-worker' | grep -q '%s/dist/vrseg/bin/../lib/'",
                     T, T), 0, "vr-worker does not load the bundle's lib/");
}
