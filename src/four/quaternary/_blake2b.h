/* BLAKE2b-256 (RFC 7693) with no key, salt or personalisation: the digest
 * `hashlib.blake2b(data, digest_size=32)` computes, for the compiled accounting core.
 * The receipt chain hashes one short message per receipt, so the whole hash is a
 * single call on a contiguous buffer, with the round function fully unrolled on
 * sixteen local words (the compiler keeps them in registers). */
#ifndef FOUR_BLAKE2B_H
#define FOUR_BLAKE2B_H

#include <stdint.h>
#include <string.h>

static const uint64_t four_b2_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
    0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
    0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

static const uint8_t four_b2_sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

#define FOUR_ROTR64(x, n) (((x) >> (n)) | ((x) << (64 - (n))))

/* G mixes two message words into four state words; the sigma indices are
 * compile-time constants, so each m[...] is a plain register or stack load. */
#define FOUR_B2G(r, i, a, b, c, d)                                  \
    do {                                                            \
        a = a + b + m[four_b2_sigma[r][2 * (i)]];                   \
        d = FOUR_ROTR64(d ^ a, 32);                                 \
        c = c + d;                                                  \
        b = FOUR_ROTR64(b ^ c, 24);                                 \
        a = a + b + m[four_b2_sigma[r][2 * (i) + 1]];               \
        d = FOUR_ROTR64(d ^ a, 16);                                 \
        c = c + d;                                                  \
        b = FOUR_ROTR64(b ^ c, 63);                                 \
    } while (0)

#define FOUR_B2ROUND(r)                                             \
    do {                                                            \
        FOUR_B2G(r, 0, v0, v4, v8, v12);                            \
        FOUR_B2G(r, 1, v1, v5, v9, v13);                            \
        FOUR_B2G(r, 2, v2, v6, v10, v14);                           \
        FOUR_B2G(r, 3, v3, v7, v11, v15);                           \
        FOUR_B2G(r, 4, v0, v5, v10, v15);                           \
        FOUR_B2G(r, 5, v1, v6, v11, v12);                           \
        FOUR_B2G(r, 6, v2, v7, v8, v13);                            \
        FOUR_B2G(r, 7, v3, v4, v9, v14);                            \
    } while (0)

static inline uint64_t four_b2_load64(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) |
           ((uint64_t)p[3] << 24) | ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) |
           ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
#endif
}

static void four_b2_compress(uint64_t h[8], const uint8_t block[128], uint64_t t, int last) {
    uint64_t m[16];
    int i;
    for (i = 0; i < 16; i++) m[i] = four_b2_load64(block + 8 * i);
    uint64_t v0 = h[0], v1 = h[1], v2 = h[2], v3 = h[3];
    uint64_t v4 = h[4], v5 = h[5], v6 = h[6], v7 = h[7];
    uint64_t v8 = four_b2_iv[0], v9 = four_b2_iv[1], v10 = four_b2_iv[2], v11 = four_b2_iv[3];
    uint64_t v12 = four_b2_iv[4] ^ t, v13 = four_b2_iv[5];
    uint64_t v14 = last ? ~four_b2_iv[6] : four_b2_iv[6], v15 = four_b2_iv[7];
    FOUR_B2ROUND(0);
    FOUR_B2ROUND(1);
    FOUR_B2ROUND(2);
    FOUR_B2ROUND(3);
    FOUR_B2ROUND(4);
    FOUR_B2ROUND(5);
    FOUR_B2ROUND(6);
    FOUR_B2ROUND(7);
    FOUR_B2ROUND(8);
    FOUR_B2ROUND(9);
    FOUR_B2ROUND(10);
    FOUR_B2ROUND(11);
    h[0] ^= v0 ^ v8;
    h[1] ^= v1 ^ v9;
    h[2] ^= v2 ^ v10;
    h[3] ^= v3 ^ v11;
    h[4] ^= v4 ^ v12;
    h[5] ^= v5 ^ v13;
    h[6] ^= v6 ^ v14;
    h[7] ^= v7 ^ v15;
}

/* The 32-byte digest of in[0:n] (n below 2^64: the counter's high word stays zero). */
static void four_blake2b_256(const unsigned char *in, size_t n, unsigned char *out) {
    uint64_t h[8];
    uint8_t block[128];
    uint64_t t = 0;
    int i;
    for (i = 0; i < 8; i++) h[i] = four_b2_iv[i];
    h[0] ^= 0x01010000ULL ^ 32ULL; /* depth 1, fanout 1, no key, 32-byte digest */
    while (n > 128) {
        t += 128;
        four_b2_compress(h, in, t, 0);
        in += 128;
        n -= 128;
    }
    memset(block, 0, 128);
    memcpy(block, in, n);
    t += n;
    four_b2_compress(h, block, t, 1);
    for (i = 0; i < 32; i++) out[i] = (unsigned char)(h[i / 8] >> (8 * (i % 8)));
}

#endif
