/* sysfs.c - one-line files of /sys (see sysfs.h). */
#include <stdio.h>
#include <string.h>
#include "src/sys/sysfs.h"

int fsp_sysfs_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}
