/* dp_index.h - the one hash and index-sizing helper of the lcore's tables:
 * reassembly (dp_reasm.c: (peer, frame_id) chains), ACK tracking (dp_ack.c:
 * peer sets), delivery tracking (dp_dlv.c: (stream, sequence) open
 * addressing) and the neighbour table (dp_neigh.c) hash and size with these,
 * and lay their pieces out 64-byte aligned with dp_align64.
 *
 * Pure C, no state: any thread. */
#ifndef DP_INDEX_H
#define DP_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A UDP source: family 4 or 6, address in network byte order (IPv4 in the
 * first 4 bytes, rest zero), port in host order. */
struct dp_peer {
	uint8_t family;
	uint8_t addr[16];
	uint16_t port;
};

static inline size_t dp_align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* The smallest power of two >= n (1 for n <= 1). */
static inline uint32_t dp_pow2_at_least(uint32_t n)
{
	uint32_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

static inline bool dp_peer_eq(const struct dp_peer *a, const struct dp_peer *b)
{
	return a->family == b->family && a->port == b->port && memcmp(a->addr, b->addr, 16) == 0;
}

/* A 64-bit key mixed to 32 bits (splitmix64's finaliser): (stream, sequence)
 * pairs, and a peer hash combined with a frame id. */
static inline uint32_t dp_key_hash(uint64_t k)
{
	k = (k ^ (k >> 30)) * 0xBF58476D1CE4E5B9ull;
	k = (k ^ (k >> 27)) * 0x94D049BB133111EBull;
	return (uint32_t)((k ^ (k >> 31)) >> 32);
}

/* A peer's hash, with `extra` mixed in: three multiply-xorshift rounds
 * (splitmix64's constants) over the key as words: the address as two
 * 64-bit loads, then port, family and extra in one. The burst path hashes
 * each distinct peer of a burst once (dp_shard.c) and reuses it for every
 * fragment of that peer. */
static inline uint32_t dp_peer_hash(const struct dp_peer *p, uint32_t extra)
{
	uint64_t a, b;
	memcpy(&a, p->addr, 8);
	memcpy(&b, p->addr + 8, 8);
	uint64_t k = (uint64_t)p->port << 40 | (uint64_t)p->family << 32 | extra;
	uint64_t h = (a ^ 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
	h ^= h >> 31;
	h = (h ^ b) * 0x94D049BB133111EBull;
	h ^= h >> 29;
	h = (h ^ k) * 0xBF58476D1CE4E5B9ull;
	h ^= h >> 32;
	return (uint32_t)h;
}

#endif
