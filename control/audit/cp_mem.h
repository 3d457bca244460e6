/* cp_mem.h - large control-plane tables mapped and populated up front.
 *
 * A table the control thread writes on its hot path (the local slot table,
 * the shadow audit's seed table) is faulted in at start: otherwise every
 * first touch of a page costs a page fault on the seed path (on a
 * paravirtualised VM, several microseconds each), for as many seeds as the
 * table has entries. Transparent huge pages are asked for (advisory). One
 * thread; no locking. Lives in fgaudit, the lowest control-plane library,
 * so that the engine (fgcp) and the shadow audit both link it. */
#ifndef CP_MEM_H
#define CP_MEM_H

#include <stddef.h>

/* len bytes (rounded up to whole pages, at least one), zeroed and resident;
 * NULL when the mapping fails. *mapped gets the length to give
 * cp_mem_unmap. */
void *cp_mem_map_populated(size_t len, size_t *mapped);
void cp_mem_unmap(void *mem, size_t mapped);

#endif
