/*
 * err.h - a failure's message, formatted into the caller's buffer: the
 * (char *err, size_t len) pair through which parsers and checks say what
 * was wrong, so that the caller decides where it goes.
 */
#ifndef FSP_BASE_ERR_H
#define FSP_BASE_ERR_H

#include <stddef.h>

/* printf into err[0..len), truncated to fit; nothing without a buffer
 * (err NULL or len 0). Returns -1, so that a parser can end with
 * `return fsp_set_err(err, len, "...", ...)`. */
int fsp_set_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
