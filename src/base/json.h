/*
 * json.h - the pieces of JSON every writer of it shares (stats, the
 * report's data): a string, escaped, and a number (null where JSON has
 * none: NaN and the infinities).
 */
#ifndef FSP_BASE_JSON_H
#define FSP_BASE_JSON_H

#include <stdio.h>

/* s as a JSON string, escaped; null for NULL. */
void fsp_json_str(FILE *out, const char *s);
/* `, "key": ` and s as fsp_json_str writes it: a member after the first. */
void fsp_json_member_str(FILE *out, const char *key, const char *s);
/* v with three decimals (stats' microseconds and MB/s), null if not finite. */
void fsp_json_num(FILE *out, double v);
/* v with six significant digits (fractions, seconds), null if not finite. */
void fsp_json_num_g(FILE *out, double v);

#endif
