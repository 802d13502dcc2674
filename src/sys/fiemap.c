/*
 * fiemap.c - a file's extents with the FIEMAP ioctl (fiemap.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include "src/base/grow.h"
#include "src/sys/fiemap.h"

#define BATCH 512 /* extents per ioctl */

int fsp_fiemap_read(int fd, struct fsp_extent **out, size_t *n)
{
	size_t sz = sizeof(struct fiemap) + BATCH * sizeof(struct fiemap_extent);
	struct fiemap *fm = malloc(sz);
	struct fsp_extent *v = NULL;
	size_t nv = 0, cap = 0;
	uint64_t start = 0;
	*out = NULL;
	*n = 0;
	if (!fm)
		return -1;
	for (;;) {
		memset(fm, 0, sz);
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_flags = FIEMAP_FLAG_SYNC; /* dirty data placed first */
		fm->fm_extent_count = BATCH;
		if (ioctl(fd, FS_IOC_FIEMAP, fm) != 0) {
			int e = errno;
			free(fm);
			free(v);
			errno = e == ENOTTY ? EOPNOTSUPP : e;
			return -1;
		}
		if (!fm->fm_mapped_extents)
			break;
		int last = 0;
		for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
			const struct fiemap_extent *x = &fm->fm_extents[i];
			if (fsp_grow((void **)&v, &cap, nv + 1, sizeof(*v), 64)) {
				free(fm);
				free(v);
				errno = ENOMEM;
				return -1;
			}
			v[nv++] = (struct fsp_extent){ x->fe_logical, x->fe_physical, x->fe_length,
						       x->fe_flags };
			start = x->fe_logical + x->fe_length;
			last |= (x->fe_flags & FIEMAP_EXTENT_LAST) != 0;
		}
		if (last || fm->fm_mapped_extents < BATCH)
			break;
	}
	free(fm);
	*out = v;
	*n = nv;
	return 0;
}
