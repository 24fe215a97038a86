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

/* The message schedule of one block. */
static void
schedule(const unsigned char *block, uint32_t w[ROUNDS])
{
	for (size_t i = 0; i < ROUNDS; i++) {
		if (i < 16) {
			w[i] = be32(block + 4 * i);
			continue;
		}
		uint32_t s0 =
		    ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 =
		    ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
}

static void
compress(struct sha *s, const unsigned char *block)
{
	uint32_t w[ROUNDS], v[8];

	schedule(block, w);
	memcpy(v, s->h, sizeof(v));
	for (size_t i = 0; i < ROUNDS; i++) {
		uint32_t s1 = ror(v[4], 6) ^ ror(v[4], 11) ^ ror(v[4], 25);
		uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
		uint32_t t1 = v[7] + s1 + ch + k[i] + w[i];
		uint32_t s0 = ror(v[0], 2) ^ ror(v[0], 13) ^ ror(v[0], 22);
		uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);

		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + s0 + maj;
	}
	for (size_t i = 0; i < 8; i++)
		s->h[i] += v[i];
}

static void
update(struct sha *s, const unsigned char *p, size_t len)
{
	s->total += len;
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
