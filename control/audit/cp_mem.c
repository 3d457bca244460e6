/* cp_mem.c - large control-plane tables mapped and populated up front
 * (cp_mem.h). */
#include <string.h>
#include <sys/mman.h>

#include "cp_mem.h"

void *cp_mem_map_populated(size_t len, size_t *mapped)
{
	size_t sz = len ? (len + 4095u) & ~(size_t)4095u : 4096u;
	void *mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	(void)madvise(mem, sz, MADV_HUGEPAGE); /* advisory */
#ifdef MADV_POPULATE_WRITE
	if (madvise(mem, sz, MADV_POPULATE_WRITE) < 0)
#endif
		memset(mem, 0, sz); /* an older kernel: touch every page ourselves */
	*mapped = sz;
	return mem;
}

void cp_mem_unmap(void *mem, size_t mapped)
{
	if (mem)
		munmap(mem, mapped);
}
