/*
 * hmac.h - HMAC-SHA256 (RFC 2104) through libcrypto (OpenSSL), for signing
 * a webhook (controller/ctl_notify_post.c). The message is given in parts,
 * so a signature over "<t>.<delivery>.<event>.<body>" needs no copy of the
 * body. Checked against RFC 4231's vectors and `openssl dgst -hmac`
 * (tests/t-common-hmac.c).
 */
#ifndef VR_HMAC_H
#define VR_HMAC_H

#include <stddef.h>

#define HMAC_SHA256_LEN 32
#define HMAC_SHA256_HEX (2 * HMAC_SHA256_LEN + 1) /* hex digits + NUL */

/* One piece of the message: n bytes at p (borrowed for the call). */
struct hmac_part {
    const void *p;
    size_t n;
};

/* HMAC-SHA256 under key (klen >= 1 bytes) of the nparts parts one after
 * another, as lowercase hex into out (NUL-terminated). Returns 0, or -1
 * when libcrypto fails (out is then ""). */
int hmac_sha256_hex(const void *key, size_t klen, const struct hmac_part *parts, int nparts,
                    char out[HMAC_SHA256_HEX]);

#endif
