/*
 * fleet.h - many hosts' latencies as one: the fleet-wide histogram of a
 * run on many hosts (fsprism run --hosts) and the straggler, the slowest
 * host. Pure functions over histograms already read.
 *
 * The fleet's percentiles come from the union of the hosts' histograms,
 * bucket by bucket (exact to a bucket, as each host's are), never from an
 * average of the hosts' percentiles, which no IO has.
 */
#ifndef FSP_PRISM_FLEET_H
#define FSP_PRISM_FLEET_H

#include <stddef.h>
#include <stdint.h>
#include "src/base/hist.h"

/* dst (initialised) += every non-NULL src[i]: the union of their IOs. */
void fsp_fleet_merge(struct fsp_hist *dst, const struct fsp_hist *const *src, size_t n);

/*
 * The straggler among n hosts, each given as the histogram of all its IOs
 * (every step and direction; NULL or empty: a host that returned nothing,
 * never the straggler): the host with the highest p99, a tie broken by the
 * higher mean, then by the earlier host. Its index, or -1 when no host has
 * an IO. A fleet runs at the pace of its slowest member's tail.
 */
int fsp_fleet_straggler(const struct fsp_hist *const *all, size_t n);

#endif
