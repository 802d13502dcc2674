/*
 * run_hosts.h - `fsprism run PROFILE TARGET --hosts HOSTFILE`: the profile
 * run by fio on many hosts at once, through fio's client/server, and stored
 * as one parent run with a run per host (docs/hosts.md).
 */
#ifndef FSP_CLI_RUN_HOSTS_H
#define FSP_CLI_RUN_HOSTS_H

#include "bench/engine/profile.h"

struct fsp_hosts_opts {
	const char *hostfile;
	const char *profile;   /* as typed: a profile's name or a job file */
	const char *target;    /* every host's target unless the host file names one */
	const char *db;
	const char *label;
	int quiet;
	int argc;              /* the command line, stored with the runs */
	char **argv;
};

/*
 * Probe every host's fio server (reachable, a fio server of this fio's
 * version) before anything runs, then run p on all of them with fio's
 * synchronised start and store what each returned. Returns 0, 1 (a host
 * failed, or a runtime failure: said in one line), 2 (a bad host file).
 */
int fsp_run_hosts(const struct fsp_hosts_opts *o, const struct fsp_params *p);

#endif
