/*
 * json.c - JSON strings and numbers (json.h).
 */
#include <math.h>
#include <stdio.h>
#include "src/base/json.h"

void fsp_json_str(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

void fsp_json_member_str(FILE *out, const char *key, const char *s)
{
	fprintf(out, ", \"%s\": ", key);
	fsp_json_str(out, s);
}

void fsp_json_num(FILE *out, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", out);
	else
		fprintf(out, "%.3f", v);
}

void fsp_json_num_g(FILE *out, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", out);
	else
		fprintf(out, "%.6g", v);
}
