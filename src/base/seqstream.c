/*
 * seqstream.c - sequential share and streams of a sequence of IOs
 * (seqstream.h).
 */
#include "src/base/seqstream.h"

void fsp_seq_add(struct fsp_seq *s, uint64_t pos, uint64_t len)
{
	int hit = -1, lru = 0;
	s->ios++;
	s->clock++;
	for (int i = 0; i < FSP_SEQ_STREAMS; i++) {
		if (s->used[i] && s->end[i] == pos) {
			hit = i;
			break;
		}
		if (s->used[i] < s->used[lru])
			lru = i;
	}
	if (hit >= 0) {
		s->seq_ios++;
	} else {
		hit = lru;
		s->id[hit] = ++s->next_id;
	}
	s->end[hit] = pos + len;
	s->used[hit] = s->clock;
	s->window[s->nwindow++] = s->id[hit];
	if (s->nwindow == FSP_SEQ_WINDOW) {
		unsigned distinct = 0;
		for (unsigned i = 0; i < FSP_SEQ_WINDOW; i++) {
			unsigned j = 0;
			while (j < i && s->window[j] != s->window[i])
				j++;
			distinct += j == i;
		}
		s->streams_sum += distinct;
		s->windows++;
		s->nwindow = 0;
	}
}

uint64_t fsp_seq_streams_x1000(const struct fsp_seq *s)
{
	return s->windows ? s->streams_sum * 1000 / s->windows : 0;
}
