/*
 * sha256.h - SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), small and
 * self-contained, so that signing a webhook (controller/ctl_notify.c) needs
 * no crypto library in the product. Checked against the FIPS and RFC 4231
 * vectors and against `openssl dgst` (tests/t-common-sha256.c).
 *
 * Not constant-time beyond what the algorithm is: it signs, it does not
 * verify secrets from an attacker.
 */
#ifndef VR_SHA256_H
#define VR_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32
#define SHA256_BLOCK_LEN  64
#define SHA256_HEX_LEN    (2 * SHA256_DIGEST_LEN + 1) /* hex digits + NUL */

/* A hash in progress: caller storage, no heap, nothing to free. */
struct sha256 {
    uint32_t h[8];                    /* the chaining state */
    uint64_t bytes;                   /* message length so far */
    unsigned char buf[SHA256_BLOCK_LEN]; /* a partial block */
    size_t nbuf;                      /* bytes in buf */
};

/* The streaming interface: init, any number of updates (n may be 0), final.
 * final writes the digest and leaves *s to be initialised again. */
void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t n);
void sha256_final(struct sha256 *s, unsigned char out[SHA256_DIGEST_LEN]);

/* The digest of one buffer. */
void sha256_digest(const void *data, size_t n, unsigned char out[SHA256_DIGEST_LEN]);

/* HMAC-SHA256 of msg under key (any length; a key longer than a block is
 * hashed first, as RFC 2104 says). */
void sha256_hmac(const void *key, size_t klen, const void *msg, size_t mlen,
                 unsigned char out[SHA256_DIGEST_LEN]);

/* A digest as lowercase hex into out (SHA256_HEX_LEN bytes, NUL-terminated). */
void sha256_hex(const unsigned char d[SHA256_DIGEST_LEN], char out[SHA256_HEX_LEN]);

#endif
