/* cap_memcpy.c - bench/cap's copy baseline: what copying the bytes of one
 * fragment (a 1468-byte chunk) costs on this core, in TSC cycles, so the
 * dataplane's cycles per fragment can be read against it.
 *   hot:  the same 1468 bytes copied into the same place (both in L1)
 *   cold: chunks from a 256 MiB source ring (packet buffers) into a 512 MiB
 *         destination (the slot table), neither cache-resident
 * plus the same for a whole seed's body (hidden * 4 bytes), hot and cold.
 * Output: one JSON line. Single-threaded; pin it with taskset to the core the
 * poll lcore used. A timing benchmark: run it on a quiet machine. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <x86intrin.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* cycles per copy of len bytes; src/dst step through windows of sws/dws bytes */
static double cycles_per_copy(size_t len, size_t sws, size_t dws, double seconds, double *ns_per)
{
	size_t step = (len + 63) & ~(size_t)63;
	size_t ns = sws / step, nd = dws / step;
	if (!ns)
		ns = 1;
	if (!nd)
		nd = 1;
	uint8_t *src = aligned_alloc(64, ns * step), *dst = aligned_alloc(64, nd * step);
	if (!src || !dst) {
		fprintf(stderr, "cap_memcpy: out of memory\n");
		exit(1);
	}
	memset(src, 3, ns * step);
	memset(dst, 1, nd * step);
	size_t i = 0, j = 0;
	uint64_t copies = 0, t0 = now_ns(), c0 = __rdtsc(), t;
	do {
		for (int k = 0; k < 1024; k++) {
			memcpy(dst + j * step, src + i * step, len);
			/* strides that are not a multiple of each other's windows,
			 * so the prefetchers see a walk, not a reuse */
			i = i + 1 == ns ? 0 : i + 1;
			j = j + 1 == nd ? 0 : j + 1;
		}
		copies += 1024;
		t = now_ns();
	} while (t - t0 < (uint64_t)(seconds * 1e9));
	uint64_t c1 = __rdtsc();
	volatile uint8_t sink = dst[(j * 7) % (nd * step)];
	(void)sink;
	free(src);
	free(dst);
	*ns_per = (double)(t - t0) / (double)copies;
	return (double)(c1 - c0) / (double)copies;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	size_t chunk = argc > 2 ? strtoul(argv[2], NULL, 0) : 1468;
	double n1, n2, n3, n4, n5, n6;
	double hot = cycles_per_copy(chunk, chunk, chunk, secs, &n1);
	double cold = cycles_per_copy(chunk, 256u << 20, 512u << 20, secs, &n2);
	double hot1536 = cycles_per_copy(1536 * 4, 1536 * 4, 1536 * 4, secs, &n3);
	double cold1536 = cycles_per_copy(1536 * 4, 256u << 20, 512u << 20, secs, &n4);
	double hot4096 = cycles_per_copy(4096 * 4, 4096 * 4, 4096 * 4, secs, &n5);
	double cold4096 = cycles_per_copy(4096 * 4, 256u << 20, 512u << 20, secs, &n6);
	printf("{\"chunk\":%zu,\"memcpy_chunk_hot_cycles\":%.1f,\"memcpy_chunk_cold_cycles\":%.1f,"
	       "\"memcpy_chunk_hot_ns\":%.2f,\"memcpy_chunk_cold_ns\":%.2f,"
	       "\"memcpy_body1536_hot_cycles\":%.1f,\"memcpy_body1536_cold_cycles\":%.1f,"
	       "\"memcpy_body4096_hot_cycles\":%.1f,\"memcpy_body4096_cold_cycles\":%.1f,"
	       "\"memcpy_body1536_hot_ns\":%.2f,\"memcpy_body1536_cold_ns\":%.2f,"
	       "\"memcpy_body4096_hot_ns\":%.2f,\"memcpy_body4096_cold_ns\":%.2f}\n",
	       chunk, hot, cold, n1, n2, hot1536, cold1536, hot4096, cold4096, n3, n4, n5, n6);
	return 0;
}
