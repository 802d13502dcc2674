/*
 * stats_hosts.h - `fsprism stats` of a run of kind fio-clients: its hosts'
 * runs side by side, per step and direction, and the fleet's histograms
 * merged (stats_hosts.c).
 */
#ifndef FSP_CLI_STATS_HOSTS_H
#define FSP_CLI_STATS_HOSTS_H

#include <stdio.h>
#include "src/db/results.h"

/* Print hdr's hosts in format "table", "csv" or "json". 0, or -1 with one
 * line on stderr (a database error, out of memory). */
int fsp_stats_hosts(FILE *out, struct fsp_store *st, const struct fsp_run_row *hdr,
		    const char *format);

#endif
