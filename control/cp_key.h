/* cp_key.h - a per-process secret for keyed hashes (the admission table's
 * home slots, the shadow audit's source classes): 8 bytes of getrandom,
 * or, with no entropy yet (early boot), a time-derived value mixed with
 * salt (the owner's address), which still keeps the hash unpredictable to
 * a peer that cannot read the process. */
#ifndef CP_KEY_H
#define CP_KEY_H

#include <stdint.h>
#include <sys/random.h>
#include <time.h>

static inline uint64_t cp_key_draw(const void *salt)
{
	uint64_t k;
	if (getrandom(&k, sizeof(k), GRND_NONBLOCK) == (ssize_t)sizeof(k))
		return k;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)salt;
}

#endif
