/* units.c - sizes and durations: parsing and formatting (see units.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/units.h"

int fsp_parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	uint64_t mult = 1;
	switch (tolower((unsigned char)*end)) {
	case 0: break;
	case 'b': mult = 1; end--; break;
	case 'k': mult = FSP_KiB; break;
	case 'm': mult = FSP_MiB; break;
	case 'g': mult = FSP_GiB; break;
	case 't': mult = FSP_TiB; break;
	case 'p': mult = FSP_PiB; break;
	default: return -1;
	}
	if (*end) {
		end++;
		/* accept k, kb, kib (any case) */
		if (tolower((unsigned char)*end) == 'i')
			end++;
		if (tolower((unsigned char)*end) == 'b')
			end++;
		if (*end)
			return -1;
	}
	if (v && mult > UINT64_MAX / v)
		return -1;
	*out = v * mult;
	return 0;
}

int fsp_parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	if (!isdigit((unsigned char)*s) && *s != '.')
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || v < 0)
		return -1;
	double mult;
	if (!*end || !strcmp(end, "s"))
		mult = 1e9;
	else if (!strcmp(end, "ms"))
		mult = 1e6;
	else if (!strcmp(end, "us"))
		mult = 1e3;
	else if (!strcmp(end, "ns"))
		mult = 1;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		mult = 60e9;
	else if (!strcmp(end, "h"))
		mult = 3600e9;
	else
		return -1;
	if (v * mult > 1e18)
		return -1;
	*ns = (uint64_t)(v * mult + 0.5);
	return 0;
}

void fsp_format_size(uint64_t v, char *buf, size_t len)
{
	static const char sfx[] = "kMGTP";
	int i = -1;
	while (v && v % 1024 == 0 && i < 4) {
		v /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)v, sfx[i]);
}

void fsp_format_duration(uint64_t ns, char *buf, size_t len)
{
	if (ns == 0)
		snprintf(buf, len, "0");
	else if (ns % FSP_HOUR == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)(ns / FSP_HOUR));
	else if (ns % FSP_MIN == 0)
		snprintf(buf, len, "%llum", (unsigned long long)(ns / FSP_MIN));
	else if (ns % FSP_SEC == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ns / FSP_SEC));
	else if (ns % FSP_MS == 0)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / FSP_MS));
	else
		snprintf(buf, len, "%lluus", (unsigned long long)(ns / 1000));
}

void fsp_format_bytes(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double d = (double)v;
	int u = 0;
	while (d >= 1024 && u < 6) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", v);
	else
		snprintf(buf, len, "%.1f %s", d, unit[u]);
}
