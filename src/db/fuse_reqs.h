/*
 * fuse_reqs.h - the fuse_reqs table (docs/schema.md): one row per FUSE
 * request that the FUSE-transport trace (src/trace/fuse.h) saw sent to the
 * daemon and ended, with its kernel `unique`, by which it joins the
 * daemon's own row in ops (ops.fuse_unique). Written after the measured
 * window; read by the join in results.h.
 */
#ifndef FSP_FUSE_REQS_H
#define FSP_FUSE_REQS_H

#include <stddef.h>
#include <stdint.h>
#include "src/db/store.h"

struct fsp_fuse_req {
	uint64_t unique;
	uint64_t send_ns, end_ns; /* CLOCK_MONOTONIC */
	uint32_t conn;            /* the connection (mount's st_dev), kernel dev_t */
	uint32_t opcode;          /* FUSE_* of <linux/fuse.h> */
	uint32_t len;             /* the request's length at send */
	int32_t error;            /* the reply's: 0 or -errno */
	int32_t step;
	uint32_t pad;
};

/* Insert n rows of run (call inside a transaction). 0, or -1 (printed). */
int fsp_fuse_reqs_insert(struct fsp_store *st, int64_t run,
			 const struct fsp_fuse_req *rows, size_t n);

#endif
