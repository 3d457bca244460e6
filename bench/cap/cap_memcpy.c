/* cap_memcpy.c - bench/cap's copy baseline: what copying the bytes of one
 * fragment (a 1468-byte chunk) costs on this core, in TSC cycles, so the
 * dataplane's cycles per fragment can be read against it.
 *   hot:  the same 1468 bytes copied into the same place (both in L1)
 *   cold: chunks from a 256 MiB source ring (packet buffers) into a 512 MiB
 *         destination (the slot table), neither cache-resident
 * plus the same for a whole seed's body (hidden * 4 bytes), hot and cold.
 *   scatter: chunks from random 2 KiB buffers of a 256 MiB pool (mbufs)
 *         to random places in 512 MiB (the slots), in 2 MiB hugepages when
 *         the kernel has 384 free (as fanogate-dp runs), else plain pages:
 *         the cold copy with the dataplane's page pattern, where cold walks
 *         both windows in order (the prefetchers and the TLB see a stream)
 * And the machine's cost of reaching a 4 KiB page the TLB does not hold
 * (chase): a dependent-load chase through 8192 lines (512 KiB, so the data
 * itself stays in L2), once packed side by side and once one line per 4 KiB
 * page (32 MiB), in 2 MiB hugepages when the kernel has free ones. With
 * hugepages the two should cost about the same; where they do not, the
 * memory is translated in 4 KiB pages anyway (a VM whose host backs it with
 * small pages: nested paging), and every new page a fragment touches (the
 * slot's lines, packet and reply mbufs) pays the difference.
 * Output: one JSON line. Single-threaded; pin it with taskset to the core the
 * poll lcore used. A timing benchmark: run it on a quiet machine. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* memory for the scatter copy: hugepages when there are enough, else plain */
static uint8_t *map_pref_huge(size_t len, int *huge)
{
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (m != MAP_FAILED)
		return m;
	*huge = 0;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		fprintf(stderr, "cap_memcpy: out of memory\n");
		exit(1);
	}
	return m;
}

/* cycles per copy of len bytes from a random 2 KiB buffer of a 256 MiB
 * pool to a random len-aligned place in 512 MiB */
static double cycles_per_scatter_copy(size_t len, double seconds, double *ns_per, int *huge)
{
	const size_t sw = 256u << 20, dw = 512u << 20, ns = sw / 2048, nd = dw / len;
	*huge = 1;
	uint8_t *src = map_pref_huge(sw, huge), *dst = map_pref_huge(dw, huge);
	memset(src, 3, sw);
	memset(dst, 1, dw);
	uint64_t r = 0x9E3779B97F4A7C15ull, copies = 0, t0 = now_ns(), c0 = __rdtsc(), t;
	do {
		for (int k = 0; k < 1024; k++) {
			r ^= r << 13, r ^= r >> 7, r ^= r << 17;
			memcpy(dst + (size_t)(r % nd) * len, src + (size_t)((r >> 32) % ns) * 2048, len);
		}
		copies += 1024;
		t = now_ns();
	} while (t - t0 < (uint64_t)(seconds * 1e9));
	uint64_t c1 = __rdtsc();
	volatile uint8_t sink = dst[r % dw];
	(void)sink;
	munmap(src, sw);
	munmap(dst, dw);
	*ns_per = (double)(t - t0) / (double)copies;
	return (double)(c1 - c0) / (double)copies;
}

/* Cycles per dependent load through n lines, one every `stride` bytes
 * (plus (i * 64) % 4096 when stride >= 4096, so the lines spread over the
 * cache's sets), visited in a fixed random order. *huge: 1 when the memory
 * came in 2 MiB hugepages (MAP_HUGETLB), 0 when not (then transparent
 * hugepages may or may not back it). */
static double chase_cycles(size_t n, size_t stride, int *huge)
{
	size_t span = (n * stride + 4096 + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
	*huge = 1;
	uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (m == MAP_FAILED) {
		*huge = 0;
		m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	size_t *perm = malloc(n * sizeof(*perm));
	if (m == MAP_FAILED || !perm) {
		fprintf(stderr, "cap_memcpy: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	uint64_t r = 88172645463325252ull; /* xorshift64, a fixed order */
	for (size_t i = n - 1; i > 0; i--) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		size_t j = (size_t)(r % (i + 1)), t = perm[i];
		perm[i] = perm[j], perm[j] = t;
	}
#define CHASE_AT(i) ((void **)(void *)(m + (i) * stride + (stride >= 4096 ? ((i) * 64) % 4096 : 0)))
	for (size_t k = 0; k < n; k++)
		*CHASE_AT(perm[k]) = CHASE_AT(perm[(k + 1) % n]);
	void **p = CHASE_AT(perm[0]);
#undef CHASE_AT
	for (size_t k = 0; k < 4 * n; k++) /* warm: data in the caches */
		p = *p;
	const size_t loads = 10u << 20;
	uint64_t c0 = __rdtsc();
	for (size_t k = 0; k < loads; k++)
		p = *p;
	uint64_t c1 = __rdtsc();
	volatile uintptr_t sink = (uintptr_t)p;
	(void)sink;
	free(perm);
	munmap(m, span);
	return (double)(c1 - c0) / (double)loads;
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
	int huge_packed, huge_spread;
	double chase_packed = chase_cycles(8192, 64, &huge_packed);
	double chase_spread = chase_cycles(8192, 4096, &huge_spread);
	int huge_scatter;
	double n7, scatter = cycles_per_scatter_copy(chunk, secs, &n7, &huge_scatter);
	printf("{\"memcpy_chunk_scatter_cycles\":%.1f,\"memcpy_chunk_scatter_ns\":%.2f,\"scatter_hugepages\":%s,",
	       scatter, n7, huge_scatter ? "true" : "false");
	printf("\"chase_lines\":8192,\"chase_packed_cycles\":%.1f,\"chase_4k_spread_cycles\":%.1f,"
	       "\"chase_hugepages\":%s,",
	       chase_packed, chase_spread, huge_packed && huge_spread ? "true" : "false");
	printf("\"chunk\":%zu,\"memcpy_chunk_hot_cycles\":%.1f,\"memcpy_chunk_cold_cycles\":%.1f,"
	       "\"memcpy_chunk_hot_ns\":%.2f,\"memcpy_chunk_cold_ns\":%.2f,"
	       "\"memcpy_body1536_hot_cycles\":%.1f,\"memcpy_body1536_cold_cycles\":%.1f,"
	       "\"memcpy_body4096_hot_cycles\":%.1f,\"memcpy_body4096_cold_cycles\":%.1f,"
	       "\"memcpy_body1536_hot_ns\":%.2f,\"memcpy_body1536_cold_ns\":%.2f,"
	       "\"memcpy_body4096_hot_ns\":%.2f,\"memcpy_body4096_cold_ns\":%.2f}\n",
	       chunk, hot, cold, n1, n2, hot1536, cold1536, hot4096, cold4096, n3, n4, n5, n6);
	return 0;
}
