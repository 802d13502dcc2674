/*
 * hostfile.h - the host file of `fsprism run --hosts`: the fio servers a
 * run drives, one a line, each with its own target if it names one.
 *
 *   # comments and blank lines are skipped
 *   node1                      fio --server on node1's port 8765, the command's TARGET
 *   10.0.0.7:8766 /dev/nvme1n1 another port, its own target
 *   [fd00::7]:8765 /dev/sdb    an IPv6 address in brackets
 *
 * A pure parser over text (no name lookup, no network): the run probes
 * every server before anything runs (docs/hosts.md).
 */
#ifndef FSP_BENCH_HOSTFILE_H
#define FSP_BENCH_HOSTFILE_H

#include <stddef.h>

#define FSP_HOST_PORT 8765      /* fio --server's default port */
#define FSP_HOSTS_MAX 256

struct fsp_host {
	char name[280];   /* as the host file names it: "node1", "10.0.0.7:8766" */
	char addr[256];   /* the address alone: "node1", "10.0.0.7", "fd00::7" */
	unsigned port;
	int ipv6;         /* given in brackets */
	char target[4096]; /* "" : the command's TARGET */
	int line;         /* where it stands in the host file */
};

struct fsp_hostfile {
	struct fsp_host *hosts;
	size_t n;
};

/*
 * Parse a host file's text; fname names it in messages. 0, or -1 with one
 * line in err: "FILE:LINE: PROBLEM" ("hosts:3: '70000' is not a port
 * (1..65535)", "hosts:5: node1:8765 is listed twice (line 2)",
 * "hosts: no hosts"). On success free it with fsp_hostfile_free.
 */
int fsp_hostfile_parse(const char *text, const char *fname, struct fsp_hostfile *hf,
		       char *err, size_t errlen);
/* The same from a file (a file that cannot be read: "FILE: strerror"). */
int fsp_hostfile_load(const char *path, struct fsp_hostfile *hf, char *err, size_t errlen);
void fsp_hostfile_free(struct fsp_hostfile *hf);

/* fio's --client value for h: "ip:10.0.0.7,8766", "ip6:fd00::7,8765", "node1,8765". */
void fsp_host_fio_arg(const struct fsp_host *h, char *buf, size_t len);

#endif
