/*
 * stats.h - per-operation, per-layer latency statistics of a stored run,
 * computed from its histograms (exact counts even when op rows were
 * sampled, dropped or not recorded), and the device-level accounting of
 * the emulation. `fsprism stats` is built on these;
 * the README demo and `compare` call them directly.
 */
#ifndef FSP_STATS_H
#define FSP_STATS_H

#include <stdint.h>
#include <stdio.h>
#include "src/base/json.h" /* fsp_json_str, for stats' sections */

struct fsp_store;

/* fsp_stats_print flags */
#define FSP_STATS_EXTENTS 1u /* list every emulated file's extents (table, json) */
#define FSP_STATS_WIDE 2u    /* table: every column (p90 too), op names in full */

/*
 * Print run `run`'s statistics to out in format "table", "csv" or "json"
 * (NULL = table). A run of a mount with the copy-on-write / journaling
 * emulation also gets the "emu" layer and the device-level accounting
 * (table: an Emulation section; json: the "emulation" key; csv: the emu
 * layer and dev_* ops only). Returns 0, or -1 with a one-line reason on
 * stderr (unknown run, unknown format, database error).
 */
int fsp_stats_print(struct fsp_store *st, int64_t run, const char *format,
		    unsigned flags, FILE *out);

/* CSV: ",field", quoted where it holds a comma, a quote or a line break. */
void fsp_stats_csv_field(FILE *out, const char *v);

/*
 * The emulation's device-level accounting of one run: what the Emulation
 * section prints (compare prints it for its emu target). Device write
 * kinds in print order: data, journal, metadata, checkpoint.
 */
#define FSP_EMU_KINDS 4
struct fsp_emu_acct {
	uint64_t user_write_bytes;          /* write + copy_file_range */
	uint64_t writes[FSP_EMU_KINDS], bytes[FSP_EMU_KINDS];
	uint64_t write_count, write_bytes;  /* all kinds */
	uint64_t reads, read_bytes;
	uint64_t flushes, fsyncs;
	/* writes the modelled file system sends with FUA (dev.fua_writes): each
	 * goes to the device as the write and a flush, counted in flushes */
	uint64_t fua_writes;
	int have_ios, have_seq, have_streams, have_fua; /* dev.* attributes present */
	uint64_t ios, seq_ios, streams_x1000;
	uint64_t files, extents;
};

/* Name of device write kind k (0 <= k < FSP_EMU_KINDS), e.g. "journal". */
const char *fsp_stats_emu_kind_name(int k);
/* The "FUA writes" line of the Emulation section (nothing without the count). */
void fsp_stats_print_fua(FILE *out, const struct fsp_emu_acct *a);

/* Fill *a from run's histograms, dev.* attributes and emu_files. 0 or -1. */
int fsp_stats_emu_acct(struct fsp_store *st, int64_t run, struct fsp_emu_acct *a);

/*
 * Quantile q (0..1) of (step, op, layer) of a run, in microseconds.
 * Returns 0 and sets *us, 1 if that histogram does not exist, -1 on error.
 */
int fsp_stats_quantile_us(struct fsp_store *st, int64_t run, int step, int op,
			  int layer, double q, double *us);


#endif
