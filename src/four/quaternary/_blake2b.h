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

/* G mixes two message words into four state words; the sigma indices are
 * compile-time constants, so each m[...] is a plain register or stack load. The
 * rotations FOUR_ROT32/24/16/63 are defined where the rounds are expanded: on
 * 64-bit words for the scalar hash, on vectors of four lanes for the AVX2 one. */
#define FOUR_B2G(r, i, a, b, c, d)                                  \
    do {                                                            \
        a = a + b + m[four_b2_sigma[r][2 * (i)]];                   \
        d = FOUR_ROT32(d ^ a);                                      \
        c = c + d;                                                  \
        b = FOUR_ROT24(b ^ c);                                      \
        a = a + b + m[four_b2_sigma[r][2 * (i) + 1]];               \
        d = FOUR_ROT16(d ^ a);                                      \
        c = c + d;                                                  \
        b = FOUR_ROT63(b ^ c);                                      \
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

/* The twelve rounds on the state words v0..v15 and message words m[16]. */
#define FOUR_B2ROUNDS                                               \
    FOUR_B2ROUND(0);                                                \
    FOUR_B2ROUND(1);                                                \
    FOUR_B2ROUND(2);                                                \
    FOUR_B2ROUND(3);                                                \
    FOUR_B2ROUND(4);                                                \
    FOUR_B2ROUND(5);                                                \
    FOUR_B2ROUND(6);                                                \
    FOUR_B2ROUND(7);                                                \
    FOUR_B2ROUND(8);                                                \
    FOUR_B2ROUND(9);                                                \
    FOUR_B2ROUND(10);                                               \
    FOUR_B2ROUND(11)

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

static inline void four_b2_store64(unsigned char *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 8);
#else
    int i;
    for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
#endif
}

#define FOUR_ROTR64(x, n) (((x) >> (n)) | ((x) << (64 - (n))))
#define FOUR_ROT32(x) FOUR_ROTR64(x, 32)
#define FOUR_ROT24(x) FOUR_ROTR64(x, 24)
#define FOUR_ROT16(x) FOUR_ROTR64(x, 16)
#define FOUR_ROT63(x) FOUR_ROTR64(x, 63)
static void four_b2_compress(uint64_t h[8], const uint8_t block[128], uint64_t t, int last) {
    uint64_t m[16];
    int i;
    for (i = 0; i < 16; i++) m[i] = four_b2_load64(block + 8 * i);
    uint64_t v0 = h[0], v1 = h[1], v2 = h[2], v3 = h[3];
    uint64_t v4 = h[4], v5 = h[5], v6 = h[6], v7 = h[7];
    uint64_t v8 = four_b2_iv[0], v9 = four_b2_iv[1], v10 = four_b2_iv[2], v11 = four_b2_iv[3];
    uint64_t v12 = four_b2_iv[4] ^ t, v13 = four_b2_iv[5];
    uint64_t v14 = last ? ~four_b2_iv[6] : four_b2_iv[6], v15 = four_b2_iv[7];
    FOUR_B2ROUNDS;
    h[0] ^= v0 ^ v8;
    h[1] ^= v1 ^ v9;
    h[2] ^= v2 ^ v10;
    h[3] ^= v3 ^ v11;
    h[4] ^= v4 ^ v12;
    h[5] ^= v5 ^ v13;
    h[6] ^= v6 ^ v14;
    h[7] ^= v7 ^ v15;
}
#undef FOUR_ROT32
#undef FOUR_ROT24
#undef FOUR_ROT16
#undef FOUR_ROT63

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
    for (i = 0; i < 4; i++) four_b2_store64(out + 8 * i, h[i]);
}

/* Four independent one-block messages at once (lane l hashes blocks[l][0:lens[l]],
 * lens[l] <= 128; the block tails are zeroed here). Receipts in an audit claim their
 * digests, so the messages of consecutive receipts are known before any is checked
 * and can be hashed side by side: each vector holds one state word of four lanes,
 * and the rounds are the scalar ones (the same macros, vector rotations). Compiled for AVX2 when the CPU has it. */
#if defined(__GNUC__) || defined(__clang__)
typedef uint64_t four_b2_x4 __attribute__((vector_size(32)));
#define FOUR_B2_SPLAT(x) ((four_b2_x4){(x), (x), (x), (x)})
#define FOUR_B2_X4_BODY                                                             \
    four_b2_x4 m[16];                                                               \
    int i, l;                                                                       \
    for (l = 0; l < 4; l++) memset(blocks[l] + lens[l], 0, 128 - lens[l]);          \
    for (i = 0; i < 16; i++)                                                        \
        m[i] = (four_b2_x4){four_b2_load64(blocks[0] + 8 * i),                      \
                            four_b2_load64(blocks[1] + 8 * i),                      \
                            four_b2_load64(blocks[2] + 8 * i),                      \
                            four_b2_load64(blocks[3] + 8 * i)};                     \
    const uint64_t h0 = four_b2_iv[0] ^ 0x01010000ULL ^ 32ULL;                     \
    four_b2_x4 v0 = FOUR_B2_SPLAT(h0), v1 = FOUR_B2_SPLAT(four_b2_iv[1]);          \
    four_b2_x4 v2 = FOUR_B2_SPLAT(four_b2_iv[2]), v3 = FOUR_B2_SPLAT(four_b2_iv[3]); \
    four_b2_x4 v4 = FOUR_B2_SPLAT(four_b2_iv[4]), v5 = FOUR_B2_SPLAT(four_b2_iv[5]); \
    four_b2_x4 v6 = FOUR_B2_SPLAT(four_b2_iv[6]), v7 = FOUR_B2_SPLAT(four_b2_iv[7]); \
    four_b2_x4 v8 = FOUR_B2_SPLAT(four_b2_iv[0]), v9 = v1, v10 = v2, v11 = v3;       \
    four_b2_x4 v12 = v4 ^ (four_b2_x4){lens[0], lens[1], lens[2], lens[3]};        \
    four_b2_x4 v13 = v5, v14 = ~v6, v15 = v7;                                       \
    FOUR_B2ROUNDS;                                                                  \
    four_b2_x4 w[4];                                                                \
    w[0] = FOUR_B2_SPLAT(h0) ^ v0 ^ v8;                                             \
    w[1] = FOUR_B2_SPLAT(four_b2_iv[1]) ^ v1 ^ v9;                                  \
    w[2] = FOUR_B2_SPLAT(four_b2_iv[2]) ^ v2 ^ v10;                                 \
    w[3] = FOUR_B2_SPLAT(four_b2_iv[3]) ^ v3 ^ v11;                                 \
    for (l = 0; l < 4; l++)                                                         \
        for (i = 0; i < 4; i++) four_b2_store64(out[l] + 8 * i, w[i][l]);

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
/* Rotations by whole bytes are byte shuffles, and by 63 an add and a shift. */
#define FOUR_ROT32(x) ((four_b2_x4)_mm256_shuffle_epi32((__m256i)(x), 0xb1))
#define FOUR_ROT24(x) ((four_b2_x4)_mm256_shuffle_epi8((__m256i)(x), four_rot24))
#define FOUR_ROT16(x) ((four_b2_x4)_mm256_shuffle_epi8((__m256i)(x), four_rot16))
#define FOUR_ROT63(x) (((x) >> 63) ^ ((x) + (x)))
__attribute__((target("avx2"))) static void four_b2_x4_avx2(uint8_t blocks[4][128],
                                                             const size_t lens[4],
                                                             unsigned char out[4][32]) {
    const __m256i four_rot24 = _mm256_setr_epi8(
        3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10,
        3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10);
    const __m256i four_rot16 = _mm256_setr_epi8(
        2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9,
        2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9);
    FOUR_B2_X4_BODY
}
#undef FOUR_ROT32
#undef FOUR_ROT24
#undef FOUR_ROT16
#undef FOUR_ROT63
#define FOUR_B2_HAVE_AVX2 1
#endif

#endif

/* Without AVX2 (or a GCC-style compiler), four scalar hashes: narrower vectors with
 * rotations built from shifts are slower than the scalar rounds. */
static void four_b2_x4_generic(uint8_t blocks[4][128], const size_t lens[4],
                               unsigned char out[4][32]) {
    int l;
    for (l = 0; l < 4; l++) four_blake2b_256(blocks[l], lens[l], out[l]);
}

static void (*four_blake2b_256_x4)(uint8_t blocks[4][128], const size_t lens[4],
                                   unsigned char out[4][32]) = four_b2_x4_generic;

/* Picks the widest implementation the CPU runs; returns its name. */
static const char *four_blake2b_init(void) {
#if defined(FOUR_B2_HAVE_AVX2)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) {
        four_blake2b_256_x4 = four_b2_x4_avx2;
        return "avx2";
    }
#endif
    return "generic";
}

#endif
