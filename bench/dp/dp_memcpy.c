/* dp_memcpy.c - this machine's single-core memcpy bandwidth for the copy
 * the dataplane does per contribution: one body of hidden * 4 bytes from a
 * packet-sized source into a slot buffer. Two working sets: 1 MiB of
 * destination (cache-resident, like a hot shard) and 512 MiB (DRAM, like a
 * full slot table). Output: one JSON line. Pin with taskset. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double bw(size_t body, size_t ws, double seconds)
{
	size_t n = ws / body;
	uint8_t *dst = aligned_alloc(64, n * body);
	uint8_t *src = aligned_alloc(64, 1 << 16);
	memset(dst, 1, n * body);
	memset(src, 2, 1 << 16);
	uint64_t bytes = 0, t0 = now_ns(), t;
	size_t i = 0;
	do {
		for (int k = 0; k < 256; k++) {
			memcpy(dst + i * body, src + (k & 7) * 64, body);
			i = i + 1 == n ? 0 : i + 1;
			bytes += body;
		}
		t = now_ns();
	} while (t - t0 < (uint64_t)(seconds * 1e9));
	volatile uint8_t sink = dst[(i * 7) % (n * body)];
	(void)sink;
	free(dst);
	free(src);
	return (double)bytes / ((double)(t - t0) / 1e9);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	printf("{\"memcpy_hot_1536\":%.0f,\"memcpy_cold_1536\":%.0f,\"memcpy_hot_4096\":%.0f,\"memcpy_cold_4096\":%.0f}\n",
	       bw(1536 * 4, 1 << 20, secs), bw(1536 * 4, 512u << 20, secs), bw(4096 * 4, 1 << 20, secs),
	       bw(4096 * 4, 512u << 20, secs));
	return 0;
}
