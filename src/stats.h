/* placeholder */
#ifndef FSP_SRC_STATS_H
#define FSP_SRC_STATS_H
#endif
