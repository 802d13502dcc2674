/*
 * hostfile.c - the host file of `fsprism run --hosts` read into a list of
 * fio servers and their targets (hostfile.h). Every mistake is one line
 * with the file and line it stands on.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/err.h"
#include "src/base/grow.h"
#include "bench/engine/hostfile.h"

/* Whitespace-separated fields of one line, a '#' ending it. */
static int split_fields(char *line, char **f, int max)
{
	int n = 0;
	char *hash = strchr(line, '#');
	if (hash)
		*hash = 0;
	for (char *p = line;;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			return n;
		if (n == max)
			return max + 1;
		f[n++] = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		if (*p)
			*p++ = 0;
	}
}

/* "1".."65535", digits only. */
static int parse_port(const char *s, unsigned *port)
{
	if (!*s || strlen(s) > 5)
		return -1;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	unsigned long v = strtoul(s, NULL, 10);
	if (v < 1 || v > 65535)
		return -1;
	*port = (unsigned)v;
	return 0;
}

/* A host name or IPv4 address: letters, digits, '-', '.', '_'. */
static int plain_addr(const char *s)
{
	if (!*s || *s == '-' || *s == '.')
		return 0;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' && *p != '_')
			return 0;
	return 1;
}

static int ipv6_addr(const char *s)
{
	if (!*s || !strchr(s, ':'))
		return 0;
	for (const char *p = s; *p; p++)
		if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
			return 0;
	return 1;
}

/* ADDRESS[:PORT] or [IPV6][:PORT] into h. 0, or -1 with the problem in err. */
static int parse_address(const char *s, struct fsp_host *h, char *err, size_t errlen)
{
	const char *port = NULL;
	size_t alen;
	h->port = FSP_HOST_PORT;
	if (*s == '[') {
		const char *close = strchr(s, ']');
		if (!close)
			return fsp_set_err(err, errlen, "'%s': no ']' after the IPv6 address", s);
		alen = (size_t)(close - s - 1);
		if (close[1] == ':')
			port = close + 2;
		else if (close[1])
			return fsp_set_err(err, errlen, "'%s': ':PORT' or nothing may follow ']'", s);
		if (alen >= sizeof(h->addr))
			return fsp_set_err(err, errlen, "'%s': address too long", s);
		memcpy(h->addr, s + 1, alen);
		h->addr[alen] = 0;
		if (!ipv6_addr(h->addr))
			return fsp_set_err(err, errlen, "'%s' is not an IPv6 address", h->addr);
		h->ipv6 = 1;
	} else {
		const char *colon = strchr(s, ':');
		if (colon && strchr(colon + 1, ':'))
			return fsp_set_err(err, errlen, "'%s': an IPv6 address goes in brackets, "
					   "[ADDRESS]:PORT", s);
		alen = colon ? (size_t)(colon - s) : strlen(s);
		if (colon)
			port = colon + 1;
		if (alen >= sizeof(h->addr))
			return fsp_set_err(err, errlen, "'%s': address too long", s);
		memcpy(h->addr, s, alen);
		h->addr[alen] = 0;
		if (!plain_addr(h->addr))
			return fsp_set_err(err, errlen, "'%s' is not a host name or address", h->addr);
	}
	if (port && parse_port(port, &h->port) != 0)
		return fsp_set_err(err, errlen, "'%s' is not a port (1..65535)", port);
	if (h->ipv6)
		snprintf(h->name, sizeof(h->name), "[%s]:%u", h->addr, h->port);
	else
		snprintf(h->name, sizeof(h->name), "%s:%u", h->addr, h->port);
	return 0;
}

/* One line into h: 1 a host, 0 nothing on it, -1 with err. */
static int parse_line(char *line, struct fsp_host *h, char *err, size_t errlen)
{
	char *f[3];
	int n = split_fields(line, f, 2);
	if (n == 0)
		return 0;
	if (n > 2)
		return fsp_set_err(err, errlen, "more than ADDRESS[:PORT] and TARGET on the line");
	memset(h, 0, sizeof(*h));
	if (parse_address(f[0], h, err, errlen) != 0)
		return -1;
	if (n == 2) {
		if (f[1][0] != '/')
			return fsp_set_err(err, errlen, "target '%s' is not an absolute path", f[1]);
		if (strlen(f[1]) >= sizeof(h->target))
			return fsp_set_err(err, errlen, "target path too long");
		strcpy(h->target, f[1]);
	}
	return 1;
}

int fsp_hostfile_parse(const char *text, const char *fname, struct fsp_hostfile *hf,
		       char *err, size_t errlen)
{
	size_t cap = 0;
	char buf[8192], why[4400];
	memset(hf, 0, sizeof(*hf));
	int lineno = 0;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		lineno++;
		if (len >= sizeof(buf)) {
			fsp_set_err(err, errlen, "%s:%d: line too long", fname, lineno);
			goto fail;
		}
		memcpy(buf, p, len);
		buf[len] = 0;
		p += len + (nl != NULL);
		struct fsp_host h;
		int rc = parse_line(buf, &h, why, sizeof(why));
		if (rc < 0) {
			fsp_set_err(err, errlen, "%s:%d: %s", fname, lineno, why);
			goto fail;
		}
		if (rc == 0)
			continue;
		h.line = lineno;
		for (size_t i = 0; i < hf->n; i++)
			if (!strcmp(hf->hosts[i].name, h.name)) {
				fsp_set_err(err, errlen, "%s:%d: %s is listed twice (line %d)",
					    fname, lineno, h.name, hf->hosts[i].line);
				goto fail;
			}
		if (hf->n == FSP_HOSTS_MAX) {
			fsp_set_err(err, errlen, "%s:%d: more than %d hosts", fname, lineno,
				    FSP_HOSTS_MAX);
			goto fail;
		}
		if (fsp_grow((void **)&hf->hosts, &cap, hf->n + 1, sizeof(h), 8) != 0) {
			fsp_set_err(err, errlen, "%s: out of memory", fname);
			goto fail;
		}
		hf->hosts[hf->n++] = h;
	}
	if (!hf->n) {
		fsp_set_err(err, errlen, "%s: no hosts (one ADDRESS[:PORT] [TARGET] a line)", fname);
		goto fail;
	}
	return 0;
fail:
	fsp_hostfile_free(hf);
	return -1;
}

int fsp_hostfile_load(const char *path, struct fsp_hostfile *hf, char *err, size_t errlen)
{
	memset(hf, 0, sizeof(*hf));
	FILE *f = fopen(path, "r");
	if (!f)
		return fsp_set_err(err, errlen, "%s: %s", path, strerror(errno));
	/* a host file is short: 256 hosts of a few dozen bytes */
	size_t cap = 1 << 20, n;
	char *text = malloc(cap + 1);
	if (!text) {
		fclose(f);
		return fsp_set_err(err, errlen, "%s: out of memory", path);
	}
	n = fread(text, 1, cap + 1, f);
	int bad = ferror(f);
	fclose(f);
	if (bad || n > cap) {
		free(text);
		return fsp_set_err(err, errlen, "%s: %s", path,
				   bad ? "cannot read it" : "larger than 1 MiB: not a host file");
	}
	text[n] = 0;
	if (strlen(text) != n) {
		free(text);
		return fsp_set_err(err, errlen, "%s: a NUL byte: not a host file", path);
	}
	int rc = fsp_hostfile_parse(text, path, hf, err, errlen);
	free(text);
	return rc;
}

void fsp_hostfile_free(struct fsp_hostfile *hf)
{
	free(hf->hosts);
	hf->hosts = NULL;
	hf->n = 0;
}

void fsp_host_fio_arg(const struct fsp_host *h, char *buf, size_t len)
{
	int ip4 = 1;
	for (const char *p = h->addr; *p; p++)
		if (!isdigit((unsigned char)*p) && *p != '.')
			ip4 = 0;
	if (h->ipv6)
		snprintf(buf, len, "ip6:%s,%u", h->addr, h->port);
	else
		snprintf(buf, len, "%s%s,%u", ip4 ? "ip:" : "", h->addr, h->port);
}
