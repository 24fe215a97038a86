/*
 * sha256.c: SHA-256 as FIPS 180-4 gives it, for the fingerprint; the
 * library links no crypto library (HACKING.md, The layers).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fingerprint.h"

#define ROUNDS 64

static const uint32_t k[ROUNDS] = {
	0x428a2f98,
	0x71374491,
	0xb5c0fbcf,
	0xe9b5dba5,
	0x3956c25b,
	0x59f111f1,
	0x923f82a4,
	0xab1c5ed5,
	0xd807aa98,
	0x12835b01,
	0x243185be,
	0x550c7dc3,
	0x72be5d74,
	0x80deb1fe,
	0x9bdc06a7,
	0xc19bf174,
	0xe49b69c1,
	0xefbe4786,
	0x0fc19dc6,
	0x240ca1cc,
	0x2de92c6f,
	0x4a7484aa,
	0x5cb0a9dc,
	0x76f988da,
	0x983e5152,
	0xa831c66d,
	0xb00327c8,
	0xbf597fc7,
	0xc6e00bf3,
	0xd5a79147,
	0x06ca6351,
	0x14292967,
	0x27b70a85,
	0x2e1b2138,
	0x4d2c6dfc,
	0x53380d13,
	0x650a7354,
	0x766a0abb,
	0x81c2c92e,
	0x92722c85,
	0xa2bfe8a1,
	0xa81a664b,
	0xc24b8b70,
	0xc76c51a3,
	0xd192e819,
	0xd6990624,
	0xf40e3585,
	0x106aa070,
	0x19a4c116,
	0x1e376c08,
	0x2748774c,
	0x34b0bcb5,
	0x391c0cb3,
	0x4ed8aa4a,
	0x5b9cca4f,
	0x682e6ff3,
	0x748f82ee,
	0x78a5636f,
	0x84c87814,
	0x8cc70208,
	0x90befffa,
	0xa4506ceb,
	0xbef9a3f7,
	0xc67178f2,
};

struct sha {
	uint32_t h[8];
	unsigned char block[64];
	size_t used;    /* bytes in block */
	uint64_t total; /* bytes hashed */
};

static uint32_t
ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* FIPS 180-4's sigmas (4.2), each rotation of the sum taken out once: a
 * rotation distributes over xor, so ror(x, 2) ^ ror(x, 13) ^ ror(x, 22) is
 * ror(ror(ror(x, 9) ^ x, 11) ^ x, 2), which needs no copy of x a
 * rotation. */
#define BSIG0(x) ror(ror(ror(x, 9) ^ (x), 11) ^ (x), 2)
#define BSIG1(x) ror(ror(ror(x, 14) ^ (x), 5) ^ (x), 6)
#define SSIG0(x) (ror(ror(x, 11) ^ (x), 7) ^ ((x) >> 3))
#define SSIG1(x) (ror(ror(x, 2) ^ (x), 17) ^ ((x) >> 10))
/* FIPS 180-4's Ch and Maj (4.2), each in one operation fewer: where e
 * is set f, else g; the bit most of a, b and c have. */
#define CH(e, f, g) ((g) ^ ((e) & ((f) ^ (g))))
#define MAJ(a, b, c) (((a) & (b)) | ((c) & ((a) | (b))))
/* A round on the working variables named in their order this round
 * (rather than moving eight values each round, the names rotate), with
 * its constant kt and its word of the schedule wt. */
#define ROUND(a, b, c, d, e, f, g, h, kt, wt) \
	do { \
		uint32_t t1 = (h) + BSIG1(e) + CH(e, f, g) + (kt) + (wt); \
		(d) += t1; \
		(h) = t1 + BSIG0(a) + MAJ(a, b, c); \
	} while (0)

/* The schedule's words of a pass, a ring of 16: j of the first pass is
 * the block's; later, j of the pass 16 words before, made into this
 * pass's in place (FIPS 180-4, 6.2.2 step 1). */
#define GIVEN(j) w[j]
#define NEXT(j) \
	(w[j] += SSIG0(w[((j) + 1) & 15]) + w[((j) + 9) & 15] + \
	        SSIG1(w[((j) + 14) & 15]))
/* Rounds i to i + 15 (i a multiple of 16 below ROUNDS), word j of the
 * pass made by sched(j). */
#define PASS(i, sched) \
	do { \
		ROUND(a, b, c, d, e, f, g, h, k[(i)&63], sched(0)); \
		ROUND(h, a, b, c, d, e, f, g, k[((i) + 1) & 63], sched(1)); \
		ROUND(g, h, a, b, c, d, e, f, k[((i) + 2) & 63], sched(2)); \
		ROUND(f, g, h, a, b, c, d, e, k[((i) + 3) & 63], sched(3)); \
		ROUND(e, f, g, h, a, b, c, d, k[((i) + 4) & 63], sched(4)); \
		ROUND(d, e, f, g, h, a, b, c, k[((i) + 5) & 63], sched(5)); \
		ROUND(c, d, e, f, g, h, a, b, k[((i) + 6) & 63], sched(6)); \
		ROUND(b, c, d, e, f, g, h, a, k[((i) + 7) & 63], sched(7)); \
		ROUND(a, b, c, d, e, f, g, h, k[((i) + 8) & 63], sched(8)); \
		ROUND(h, a, b, c, d, e, f, g, k[((i) + 9) & 63], sched(9)); \
		ROUND(g, h, a, b, c, d, e, f, k[((i) + 10) & 63], sched(10)); \
		ROUND(f, g, h, a, b, c, d, e, k[((i) + 11) & 63], sched(11)); \
		ROUND(e, f, g, h, a, b, c, d, k[((i) + 12) & 63], sched(12)); \
		ROUND(d, e, f, g, h, a, b, c, k[((i) + 13) & 63], sched(13)); \
		ROUND(c, d, e, f, g, h, a, b, k[((i) + 14) & 63], sched(14)); \
		ROUND(b, c, d, e, f, g, h, a, k[((i) + 15) & 63], sched(15)); \
	} while (0)

/* One block into s->h (FIPS 180-4, 6.2.2): sixteen rounds a pass, each
 * word of the schedule made as its round takes it, at a fixed place in
 * the ring. */
static void
compress(struct sha *s, const unsigned char *block)
{
	uint32_t w[16];
	uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
	uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];

	for (size_t i = 0; i < 16; i++)
		w[i] = be32(block + 4 * i);
	PASS(0, GIVEN);
	for (size_t i = 16; i < ROUNDS; i += 16)
		PASS(i, NEXT);
	s->h[0] += a;
	s->h[1] += b;
	s->h[2] += c;
	s->h[3] += d;
	s->h[4] += e;
	s->h[5] += f;
	s->h[6] += g;
	s->h[7] += h;
}

static void
update(struct sha *s, const unsigned char *p, size_t len)
{
	s->total += len;
	for (; s->used == 0 && len >= sizeof(s->block); p += 64, len -= 64)
		compress(s, p);
	while (len > 0) {
		size_t n = sizeof(s->block) - s->used;

		if (n > len)
			n = len;
		memcpy(s->block + s->used, p, n);
		s->used += n;
		p += n;
		len -= n;
		if (s->used == sizeof(s->block)) {
			compress(s, s->block);
			s->used = 0;
		}
	}
}

void
mf_fp_sha256(const void *data, size_t len, unsigned char out[32])
{
	static const uint32_t init[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372,
		0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	static const unsigned char pad[64] = { 0x80 };
	unsigned char bits[8];
	struct sha s;
	uint64_t total;

	memcpy(s.h, init, sizeof(s.h));
	s.used = 0;
	s.total = 0;
	update(&s, data, len);
	total = s.total * 8;
	update(&s, pad, 1 + (119 - s.used) % 64);
	for (size_t i = 0; i < 8; i++)
		bits[i] = (unsigned char)(total >> (56 - 8 * i));
	update(&s, bits, sizeof(bits));
	for (size_t i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(s.h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s.h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s.h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s.h[i];
	}
}
