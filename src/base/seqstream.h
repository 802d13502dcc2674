/*
 * seqstream.h - the sequentiality of a sequence of IOs, one definition for
 * every view of a device: the emulation's own accounting of its store IO
 * (fs/emu/dev.c) and the access pattern of traced block requests
 * (src/prism/pattern.c).
 *
 * An IO is sequential when it starts where one of the FSP_SEQ_STREAMS most
 * recently continued streams ended; otherwise it starts a new stream,
 * replacing the least recently continued one. Streams: the number of
 * distinct streams among each window of FSP_SEQ_WINDOW consecutive IOs,
 * averaged over the complete windows (1.0: purely sequential; two
 * interleaved sequential streams: 2.0; random IO: up to 16). Positions and
 * lengths are in any one unit (bytes, sectors). No allocation; not locked.
 */
#ifndef FSP_BASE_SEQSTREAM_H
#define FSP_BASE_SEQSTREAM_H

#include <stdint.h>

#define FSP_SEQ_STREAMS 32
#define FSP_SEQ_WINDOW 16

struct fsp_seq {
	uint64_t ios, seq_ios;  /* IOs seen; of those, sequential */
	uint64_t windows;       /* complete windows of FSP_SEQ_WINDOW IOs */
	uint64_t streams_sum;   /* distinct streams summed over those windows */
	/* the tracker */
	uint64_t end[FSP_SEQ_STREAMS], used[FSP_SEQ_STREAMS], id[FSP_SEQ_STREAMS];
	uint64_t next_id, clock;
	uint64_t window[FSP_SEQ_WINDOW];
	unsigned nwindow;
};

/* Zero it (memset, or = {0}) to start. */
void fsp_seq_add(struct fsp_seq *s, uint64_t pos, uint64_t len);
/* Mean distinct streams per window times 1000; 0 before the first window. */
uint64_t fsp_seq_streams_x1000(const struct fsp_seq *s);

#endif
