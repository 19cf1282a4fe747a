/*
 * sha256.c - SHA-256 as FIPS 180-4 section 6.2 gives it (the round
 * constants of 4.2.2, the initial value of 5.3.3, padding of 5.1.1), and
 * HMAC over it (RFC 2104). Written for this project from the standard; see
 * sha256.h.
 */
#include "sha256.h"

#include <string.h>

/* ---- the compression function ---- */

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t sha256_ror(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

/* One 64-byte block into the state (FIPS 180-4, 6.2.2). */
static void sha256_block(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = sha256_ror(w[t - 15], 7) ^ sha256_ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = sha256_ror(w[t - 2], 17) ^ sha256_ror(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t S1 = sha256_ror(e, 6) ^ sha256_ror(e, 11) ^ sha256_ror(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = k + S1 + ch + sha256_k[t] + w[t];
        uint32_t S0 = sha256_ror(a, 2) ^ sha256_ror(a, 13) ^ sha256_ror(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + maj;
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d;
    h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

/* ---- streaming ---- */

void sha256_init(struct sha256 *s)
{
    static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
    memcpy(s->h, iv, sizeof iv);
    s->bytes = 0;
    s->nbuf = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    s->bytes += n;
    if (s->nbuf) {
        size_t take = SHA256_BLOCK_LEN - s->nbuf < n ? SHA256_BLOCK_LEN - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, take);
        s->nbuf += take;
        p += take;
        n -= take;
        if (s->nbuf < SHA256_BLOCK_LEN)
            return;
        sha256_block(s->h, s->buf);
        s->nbuf = 0;
    }
    for (; n >= SHA256_BLOCK_LEN; p += SHA256_BLOCK_LEN, n -= SHA256_BLOCK_LEN)
        sha256_block(s->h, p);
    memcpy(s->buf, p, n);
    s->nbuf = n;
}

void sha256_final(struct sha256 *s, unsigned char out[SHA256_DIGEST_LEN])
{
    /* 0x80, zeros up to 56 mod 64, then the length in bits, big-endian */
    uint64_t bits = s->bytes * 8;
    s->buf[s->nbuf++] = 0x80;
    if (s->nbuf > 56) {
        memset(s->buf + s->nbuf, 0, SHA256_BLOCK_LEN - s->nbuf);
        sha256_block(s->h, s->buf);
        s->nbuf = 0;
    }
    memset(s->buf + s->nbuf, 0, 56 - s->nbuf);
    for (int i = 0; i < 8; i++)
        s->buf[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_block(s->h, s->buf);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)s->h[i];
    }
    sha256_init(s);
}

void sha256_digest(const void *data, size_t n, unsigned char out[SHA256_DIGEST_LEN])
{
    struct sha256 s;
    sha256_init(&s);
    sha256_update(&s, data, n);
    sha256_final(&s, out);
}

/* ---- HMAC ---- */

void sha256_hmac(const void *key, size_t klen, const void *msg, size_t mlen,
                 unsigned char out[SHA256_DIGEST_LEN])
{
    unsigned char k[SHA256_BLOCK_LEN] = { 0 }, pad[SHA256_BLOCK_LEN], inner[SHA256_DIGEST_LEN];
    if (klen > SHA256_BLOCK_LEN)
        sha256_digest(key, klen, k);
    else if (klen)
        memcpy(k, key, klen);
    struct sha256 s;
    for (int i = 0; i < SHA256_BLOCK_LEN; i++)
        pad[i] = k[i] ^ 0x36;
    sha256_init(&s);
    sha256_update(&s, pad, sizeof pad);
    sha256_update(&s, msg, mlen);
    sha256_final(&s, inner);
    for (int i = 0; i < SHA256_BLOCK_LEN; i++)
        pad[i] = k[i] ^ 0x5c;
    sha256_update(&s, pad, sizeof pad);
    sha256_update(&s, inner, sizeof inner);
    sha256_final(&s, out);
    memset(k, 0, sizeof k);
    memset(pad, 0, sizeof pad);
}

void sha256_hex(const unsigned char d[SHA256_DIGEST_LEN], char out[SHA256_HEX_LEN])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < SHA256_DIGEST_LEN; i++) {
        out[2 * i] = hx[d[i] >> 4];
        out[2 * i + 1] = hx[d[i] & 15];
    }
    out[2 * SHA256_DIGEST_LEN] = '\0';
}
