/*
 * grow.c - a growing array's next capacity (grow.h).
 */
#include <stdlib.h>
#include "src/base/grow.h"

int fsp_grow_realloc(void **v, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t c = *cap ? *cap * 2 : first;
	while (c < need)
		c *= 2;
	void *p = realloc(*v, c * size);
	if (!p)
		return -1;
	*v = p;
	*cap = c;
	return 0;
}
