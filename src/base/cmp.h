/*
 * cmp.h - the three-way comparison every sort and search comparator is
 * written with: -1, 0 or 1 as x is below, equal to or above y. Not x - y,
 * which overflows for wide or unsigned values. Keys chain with GNU C's
 * `a ?: b` (a unless it is 0), so that the first key that differs decides:
 *
 *     return FSP_CMP(x->t, y->t) ?: FSP_CMP(x->row, y->row);
 */
#ifndef FSP_BASE_CMP_H
#define FSP_BASE_CMP_H

#define FSP_CMP(x, y) (((x) > (y)) - ((x) < (y)))

#endif
