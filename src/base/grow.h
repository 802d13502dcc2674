/*
 * grow.h - room for one more element in a growing array: the capacity
 * doubled, from a first size, as every reader and table that collects rows
 * grows its array.
 */
#ifndef FSP_BASE_GROW_H
#define FSP_BASE_GROW_H

#include <stddef.h>

/* The realloc behind fsp_grow, when need does not fit. */
int fsp_grow_realloc(void **v, size_t *cap, size_t need, size_t size, size_t first);

/* Make room for need elements of size bytes in *v (capacity *cap, counted
 * in elements): the capacity doubled, from first when it is 0, until need
 * fits. 0, or -1 with *v and *cap as they were (no memory). Inline: a push
 * that fits costs a compare, as the copies it replaces did. */
static inline int fsp_grow(void **v, size_t *cap, size_t need, size_t size, size_t first)
{
	return need <= *cap ? 0 : fsp_grow_realloc(v, cap, need, size, first);
}

#endif
