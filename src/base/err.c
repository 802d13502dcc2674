/*
 * err.c - a failure's message into the caller's buffer (err.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include "src/base/err.h"

int fsp_set_err(char *err, size_t len, const char *fmt, ...)
{
	if (!err || !len)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}
