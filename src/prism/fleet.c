/*
 * fleet.c - the fleet-wide histogram and the straggler of a run on many
 * hosts (fleet.h).
 */
#include "src/prism/fleet.h"

void fsp_fleet_merge(struct fsp_hist *dst, const struct fsp_hist *const *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (src[i])
			fsp_hist_merge(dst, src[i]);
}

int fsp_fleet_straggler(const struct fsp_hist *const *all, size_t n)
{
	int best = -1;
	uint64_t best_p99 = 0;
	double best_mean = 0;
	for (size_t i = 0; i < n; i++) {
		if (!all[i] || !all[i]->count)
			continue;
		uint64_t p99 = fsp_hist_quantile(all[i], 0.99);
		double mean = fsp_hist_mean(all[i]);
		if (best < 0 || p99 > best_p99 || (p99 == best_p99 && mean > best_mean)) {
			best = (int)i;
			best_p99 = p99;
			best_mean = mean;
		}
	}
	return best;
}
