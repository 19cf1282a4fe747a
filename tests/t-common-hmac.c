/*
 * t-common-hmac.c - common/hmac.c (libcrypto's HMAC-SHA256) against RFC
 * 4231's cases, fed in one piece and split at every point, and against
 * `openssl dgst -sha256 -hmac` on fresh random bodies (the webhook
 * signature's recipe, README "Security").
 */
#include "hmac.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static void hmac_hex(const void *key, size_t kn, const void *msg, size_t mn,
                     char out[HMAC_SHA256_HEX])
{
    struct hmac_part p = { msg, mn };
    cr_assert_eq(hmac_sha256_hex(key, kn, &p, 1, out), 0);
}

/* The same message split at `at`: the parts must not change the MAC. */
static void hmac_hex_split(const void *key, size_t kn, const void *msg, size_t mn, size_t at,
                           char out[HMAC_SHA256_HEX])
{
    struct hmac_part p[] = { { msg, at }, { (const char *)msg + at, mn - at } };
    cr_assert_eq(hmac_sha256_hex(key, kn, p, 2, out), 0);
}

Test(common_hmac, rfc_4231_hmac_vectors)
{
    unsigned char k20[20], k25[25], k131[131], dd[50], cd[50];
    memset(k20, 0x0b, sizeof k20);
    for (int i = 0; i < 25; i++)
        k25[i] = (unsigned char)(i + 1);
    memset(k131, 0xaa, sizeof k131);
    memset(dd, 0xdd, sizeof dd);
    memset(cd, 0xcd, sizeof cd);
    unsigned char kaa[20], k0c[20];
    memset(kaa, 0xaa, sizeof kaa);
    memset(k0c, 0x0c, sizeof k0c);
    static const char big[] = "This is a test using a larger than block-size key and a larger "
                              "than block-size data. The key needs to be hashed before being "
                              "used by the HMAC algorithm.";
    const struct { const void *k; size_t kn; const void *m; size_t mn; const char *want; } v[] = {
        { k20, 20, "Hi There", 8,
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
        { "Jefe", 4, "what do ya want for nothing?", 28,
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
        { kaa, 20, dd, 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
        { k25, 25, cd, 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
        /* case 5 is published truncated to 128 bits */
        { k0c, 20, "Test With Truncation", 20, "a3b6167473100ee06e0c796c2955552b" },
        { k131, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 54,
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
        { k131, 131, big, sizeof big - 1,
          "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char got[HMAC_SHA256_HEX];
        hmac_hex(v[i].k, v[i].kn, v[i].m, v[i].mn, got);
        cr_assert_eq(strncmp(got, v[i].want, strlen(v[i].want)), 0, "case %zu: %s", i + 1, got);
        for (size_t at = 0; at <= v[i].mn; at++) {
            hmac_hex_split(v[i].k, v[i].kn, v[i].m, v[i].mn, at, got);
            cr_assert_eq(strncmp(got, v[i].want, strlen(v[i].want)), 0, "case %zu split at %zu",
                         i + 1, at);
        }
    }
}

/* `openssl dgst` on a file: the hex digest after "= " into out. */
static void openssl_hex(const char *args, const char *path, char *out, size_t n)
{
    char line[512];
    cr_assert_eq(tsh_out(line, sizeof line, "openssl dgst -sha256 %s '%s'", args, path), 0,
                 "openssl dgst failed (is the openssl CLI installed?)");
    const char *eq = strstr(line, "= ");
    cr_assert_not_null(eq, "%s", line);
    snprintf(out, n, "%.64s", eq + 2);
}

Test(common_hmac, agrees_with_openssl_on_random_bodies)
{
    char path[] = "/tmp/vrtest-hmac-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    static unsigned char body[70000];
    /* lengths around the block and padding edges, and a long one */
    static const size_t lens[] = { 0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 70000 };
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        size_t n = lens[i];
        cr_assert_eq(getrandom(body, n, 0), (ssize_t)n);
        cr_assert_eq(ftruncate(fd, 0), 0);
        cr_assert_eq(pwrite(fd, body, n, 0), (ssize_t)n);
        /* a printable key (openssl takes it on the command line) of varying length */
        char key[200];
        unsigned char r[200];
        size_t kn = 1 + (n * 7) % 150;
        cr_assert_eq(getrandom(r, kn, 0), (ssize_t)kn);
        for (size_t j = 0; j < kn; j++)
            key[j] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[r[j] % 62];
        key[kn] = '\0';
        char mine[HMAC_SHA256_HEX], theirs[80], args[256];
        hmac_hex(key, kn, body, n, mine);
        snprintf(args, sizeof args, "-hmac '%s'", key);
        openssl_hex(args, path, theirs, sizeof theirs);
        cr_assert_str_eq(mine, theirs, "hmac of %zu random bytes, %zu-byte key", n, kn);
    }
    close(fd);
    unlink(path);
}
