/*
 * report.c - the HTML report's file (report.h): the page around the
 * charts, Chart.js embedded from its installed file, the page's own script
 * (report.js, built into the program as report_js.h), and the data object,
 * written aside and renamed into place.
 *
 * Chart.js draws; report.js only arranges the data into its charts and
 * tables. Nothing on the page is fetched: the page opens offline.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "src/base/json.h"
#include "src/db/store.h"
#include "src/report/data.h"
#include "src/report/report.h"

static const char report_js[] =
#include "src/report/report_js.h"
	;

static const char report_css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1200px;"
	"padding:0 16px 40px;color:#222;background:#fff}"
	"h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}"
	"h3{font-size:15px;margin:20px 0 4px}"
	".chart{position:relative;height:340px}.chart.tall{height:420px}"
	".note{color:#555;font-size:13px;margin:4px 0}"
	"table{border-collapse:collapse;font-size:12px;margin:6px 0}"
	"td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}"
	"th{background:#f4f4f4}td.l,th.l{text-align:left}"
	"details{margin:4px 0 12px}summary{cursor:pointer;color:#335}"
	".grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:12px}"
	/* the answer first: headlines beside the bathtub, on the first screen */
	".answer{border:2px solid #b60;padding:4px 12px 8px;background:#fff8ee}"
	".top{display:grid;grid-template-columns:minmax(0,5fr) minmax(0,6fr);gap:16px;align-items:start}"
	".headline{font-size:16px;font-weight:600;margin:8px 0}.shape{margin:4px 0}"
	"table.findings{width:100%}table.findings td{vertical-align:top}"
	".swatch{display:inline-block;width:14px;height:10px;margin:0 3px 0 6px;border:1px solid #888}"
	".scale{font-size:12px;color:#444;margin:2px 0}";

const char *fsp_report_default_chartjs(void)
{
#ifdef FSP_CHARTJS_PATH
	return FSP_CHARTJS_PATH;
#else
	return "";
#endif
}

/* The whole of a file, NUL-terminated, malloc'd; NULL with err set. */
static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "cannot read Chart.js at %s: %s (install libjs-chart.js, "
			 "or give --chartjs FILE)", path, strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (cap - n < 65536) {
			char *b = realloc(buf, cap + 262144);
			if (!b)
				break;
			buf = b;
			cap += 262144;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	int bad = ferror(f) || !buf;
	fclose(f);
	if (bad) {
		snprintf(err, errlen, "cannot read Chart.js at %s", path);
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

/* Does s contain "</script" in any case (which would end the element)? */
static int has_end_tag(const char *s)
{
	for (const char *p = strchr(s, '<'); p; p = strchr(p + 1, '<'))
		if (!strncasecmp(p, "</script", 8))
			return 1;
	return 0;
}

/* The data object: every run with its targets, each target's stats. */
static int write_data(FILE *out, struct fsp_store *st, const char *dbname,
		      const struct fsp_report_run *runs, int nruns)
{
	fputs("{\"generator\": {\"program\": \"fsprism\", \"version\": ", out);
	fsp_json_str(out, FSP_VERSION);
	fputs("}, \"database\": ", out);
	fsp_json_str(out, dbname);
	fputs(",\n\"runs\": [", out);
	for (int i = 0; i < nruns; i++) {
		const struct fsp_report_run *r = &runs[i];
		fprintf(out, "%s\n{\"run\": %" PRId64 ", \"role\": \"%s\", \"kind\": ",
			i ? "," : "", r->run, i ? "vs" : "main");
		fsp_json_str(out, r->kind);
		fputs(",\n", out);
		if (fsp_report_write_run_data(out, st, r->run) < 0)
			return -1;
		fputs(",\n\"targets\": [", out);
		for (int t = 0; t < r->ntargets; t++) {
			const struct fsp_report_target *g = &r->targets[t];
			fprintf(out, "%s\n{\"run\": %" PRId64 ", \"label\": ", t ? "," : "", g->run);
			fsp_json_str(out, g->label);
			fputs(", \"kind\": ", out);
			fsp_json_str(out, g->kind);
			fputs(",\n\"stats\": ", out);
			fputs(g->stats_json, out);
			fputs(",\n", out);
			if (fsp_report_write_run_data(out, st, g->run) < 0)
				return -1;
			fputs("}", out);
		}
		fputs("]", out);
		/* the analyses' place: their members go into the run's object */
		if (r->analysis_json && *r->analysis_json)
			fprintf(out, ",\n%s", r->analysis_json);
		fputs("}", out);
	}
	fputs("]}\n", out);
	return 0;
}

/* JSON inside a script element: '<' only occurs in strings, as \u003c. */
static void put_script_json(FILE *out, const char *json)
{
	for (const char *p = json; *p; p++) {
		if (*p == '<')
			fputs("\\u003c", out);
		else
			fputc(*p, out);
	}
}

static void put_html_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*s, out);
		}
	}
}

int fsp_report_write(const char *path, struct fsp_store *st, const char *dbname,
		     const struct fsp_report_run *runs, int nruns, const char *chartjs,
		     char *err, size_t errlen)
{
	size_t liblen = 0, datalen = 0;
	char *data = NULL, *tmp = NULL;
	FILE *out = NULL;
	int rc = -1, made = 0;

	if (!chartjs || !*chartjs) {
		snprintf(err, errlen, "no Chart.js: this fsprism was configured without it "
			 "(install libjs-chart.js and configure again, or give --chartjs FILE)");
		return -1;
	}
	char *lib = read_file(chartjs, &liblen, err, errlen);
	if (!lib)
		return -1;
	if (liblen == 0 || has_end_tag(lib) || !strstr(lib, "Chart")) {
		snprintf(err, errlen, "%s does not look like Chart.js (the UMD build, "
			 "chart.min.js)", chartjs);
		goto out;
	}
	FILE *mem = open_memstream(&data, &datalen);
	if (!mem) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	int drc = write_data(mem, st, dbname, runs, nruns);
	if (fclose(mem) != 0 || drc < 0) {
		snprintf(err, errlen, "database error while reading the runs: %s",
			 fsp_store_errmsg(st));
		goto out;
	}

	if (asprintf(&tmp, "%s.tmp", path) < 0) {
		tmp = NULL;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !(out = fdopen(fd, "w"))) {
		snprintf(err, errlen, "cannot write the report %s (as %s first): %s", path, tmp,
			 strerror(errno));
		if (fd >= 0) {
			close(fd);
			made = 1;
		}
		goto out;
	}
	made = 1;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"generator\" content=\"fsprism ", out);
	put_html_text(out, FSP_VERSION);
	fputs("\">\n<title>fsprism report: ", out);
	fprintf(out, "run %" PRId64, runs[0].run);
	if (nruns > 1)
		fprintf(out, " vs run %" PRId64, runs[1].run);
	fputs(" (", out);
	put_html_text(out, dbname);
	fprintf(out, ")</title>\n<style>%s</style>\n</head>\n<body>\n", report_css);
	fputs("<main id=\"fsp-report\"><noscript>This report draws its charts with the "
	      "JavaScript embedded in it; the numbers are in the fsp-data element of the "
	      "page's source.</noscript></main>\n", out);
	fputs("<script type=\"application/json\" id=\"fsp-data\">", out);
	put_script_json(out, data);
	fputs("</script>\n<script id=\"fsp-chartjs\">\n", out);
	fwrite(lib, 1, liblen, out);
	fprintf(out, "\n</script>\n<script id=\"fsp-page\">\n%s</script>\n</body>\n</html>\n",
		report_js);
	if (fflush(out) != 0 || fsync(fileno(out)) != 0) {
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	int cerr = fclose(out);
	out = NULL;
	if (cerr != 0) {
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (rename(tmp, path) != 0) {
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (out)
		fclose(out);
	if (rc && made)
		unlink(tmp);
	free(tmp);
	free(data);
	free(lib);
	return rc;
}
