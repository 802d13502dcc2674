/* mountinfo.c - reading /proc/self/mountinfo (see mountinfo.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "src/sys/mountinfo.h"

void fsp_unescape_octal(char *s)
{
	char *out = s;
	for (char *in = s; *in;) {
		if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' &&
		    in[2] <= '7' && in[3] >= '0' && in[3] <= '7') {
			*out++ = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
			in += 4;
		} else {
			*out++ = *in++;
		}
	}
	*out = 0;
}

int fsp_mountinfo_open(struct fsp_mountinfo *mi)
{
	mi->line = NULL;
	mi->cap = 0;
	mi->f = fopen("/proc/self/mountinfo", "re");
	return mi->f ? 0 : -1;
}

int fsp_mountinfo_open_pid(struct fsp_mountinfo *mi, long pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/mountinfo", pid);
	mi->line = NULL;
	mi->cap = 0;
	mi->f = fopen(path, "re");
	return mi->f ? 0 : -1;
}

int fsp_mountinfo_next(struct fsp_mountinfo *mi, struct fsp_mount *m)
{
	ssize_t len;
	while ((len = getline(&mi->line, &mi->cap, mi->f)) > 0) {
		/* id parent maj:min root mountpoint opts [optional...] - fstype source superopts,
		 * split at every space: a source can be empty ("tmpfs  rw") */
		if (mi->line[len - 1] == '\n')
			mi->line[len - 1] = 0;
		char *rest = mi->line, *field[6] = { 0 };
		for (int i = 0; i < 6 && rest; i++)
			field[i] = strsep(&rest, " ");
		int sep = 0;
		while (rest && !sep)
			sep = !strcmp(strsep(&rest, " "), "-");
		char *fstype = sep && rest ? strsep(&rest, " ") : NULL;
		char *source = fstype && rest ? strsep(&rest, " ") : NULL;
		if (!field[5] || !source ||
		    sscanf(field[2], "%u:%u", &m->major, &m->minor) != 2)
			continue;
		fsp_unescape_octal(field[3]);
		fsp_unescape_octal(field[4]);
		fsp_unescape_octal(source);
		m->root = field[3];
		m->mount_point = field[4];
		m->fstype = fstype;
		m->source = source;
		return 1;
	}
	return 0;
}

void fsp_mountinfo_close(struct fsp_mountinfo *mi)
{
	free(mi->line);
	if (mi->f)
		fclose(mi->f);
	mi->f = NULL;
	mi->line = NULL;
}

/*
 * Is path (a realpath) a mount point? Returns 1 and the fs type of the last
 * (topmost) mount there, 0 if not mounted, -1 if mountinfo is unreadable.
 */
int fsp_mountinfo_find(const char *path, char *fstype, size_t fstype_len)
{
	struct fsp_mountinfo mi;
	struct fsp_mount m;
	int found = 0;
	if (fsp_mountinfo_open(&mi) < 0)
		return -1;
	while (fsp_mountinfo_next(&mi, &m)) {
		if (strcmp(m.mount_point, path))
			continue;
		found = 1;
		snprintf(fstype, fstype_len, "%s", m.fstype);
	}
	fsp_mountinfo_close(&mi);
	return found;
}

/* The mount namespace of pid as its link text ("mnt:[4026531832]"), or "". */
static void mnt_ns_of(const char *pid, char *ns, size_t len)
{
	char path[300]; /* a d_name is up to 255 bytes */
	snprintf(path, sizeof(path), "/proc/%s/ns/mnt", pid);
	ssize_t n = readlink(path, ns, len - 1);
	ns[n > 0 ? n : 0] = 0;
}

/*
 * Every process is looked at once per mount namespace (the first process
 * seen in a namespace answers for it), so a machine of many processes in a
 * few namespaces costs a few mountinfo reads.
 */
long fsp_mountinfo_holder(unsigned major, unsigned minor)
{
	char self[64], ns[64];
	mnt_ns_of("self", self, sizeof(self));
	DIR *proc = opendir("/proc");
	if (!proc)
		return 0;
	enum { SEEN_MAX = 64 };
	char seen[SEEN_MAX][64];
	int nseen = 0;
	long holder = 0;
	for (struct dirent *e; !holder && (e = readdir(proc));) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		mnt_ns_of(e->d_name, ns, sizeof(ns));
		if (!ns[0] || !strcmp(ns, self))
			continue;
		int known = 0;
		for (int i = 0; i < nseen && !known; i++)
			known = !strcmp(seen[i], ns);
		if (known)
			continue;
		if (nseen < SEEN_MAX)
			memcpy(seen[nseen++], ns, sizeof(ns));
		struct fsp_mountinfo mi;
		struct fsp_mount m;
		long pid = strtol(e->d_name, NULL, 10);
		if (fsp_mountinfo_open_pid(&mi, pid) < 0)
			continue;
		while (!holder && fsp_mountinfo_next(&mi, &m))
			if (m.major == major && m.minor == minor)
				holder = pid;
		fsp_mountinfo_close(&mi);
	}
	closedir(proc);
	return holder;
}
