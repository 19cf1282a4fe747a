/*
 * hmac.c - see hmac.h. OpenSSL 3's EVP_MAC: the HMAC_CTX calls are
 * deprecated there.
 */
#include "hmac.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

int hmac_sha256_hex(const void *key, size_t klen, const struct hmac_part *parts, int nparts,
                    char out[HMAC_SHA256_HEX])
{
    out[0] = '\0';
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
        OSSL_PARAM_construct_end()
    };
    unsigned char d[HMAC_SHA256_LEN];
    size_t dn = 0;
    int ok = ctx && EVP_MAC_init(ctx, key, klen, params);
    for (int i = 0; ok && i < nparts; i++)
        ok = parts[i].n == 0 || EVP_MAC_update(ctx, parts[i].p, parts[i].n);
    ok = ok && EVP_MAC_final(ctx, d, &dn, sizeof d) && dn == sizeof d;
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    if (!ok)
        return -1;
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof d; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[2 * sizeof d] = '\0';
    return 0;
}
