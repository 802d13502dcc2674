/*
 * model.c - the model drive (model.h): its spec, its state, and the cost of
 * one IO.
 *
 * State: the tracked streams (the offset that continues each, when it was
 * last used), the last IO's stream, a ring of the most recent
 * writes (offset, length, time) for the read-after-write knob, the write
 * cache's fill, and the jitter's xorshift. All of it moves only with the
 * IOs given, so the same IOs at the same times cost the same every run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fs/model/model.h"
#include "src/base/err.h"
#include "src/base/units.h"

struct stream {
	uint64_t id;       /* 0: free slot */
	uint64_t next;     /* the offset that continues it */
	uint64_t used;     /* IO sequence number of its last IO */
};

struct recent_write {
	uint64_t off, len, at;
};

struct fsp_model {
	struct fsp_model_cfg cfg;
	struct stream streams[FSP_MODEL_MAX_STREAMS];
	uint64_t next_id, last_id, seq;
	struct recent_write *writes; /* ring of FSP_MODEL_WRITES */
	uint64_t nwrites;            /* written ever; the newest is nwrites-1 */
	uint64_t fill, fill_at;      /* cache bytes in use, as of fill_at */
	uint64_t rng;
	struct fsp_model_stats st;
};

static int dur(const char *key, const char *v, uint64_t *ns, char *err, size_t len)
{
	if (fsp_parse_duration(v, ns) || *ns > 10 * FSP_SEC)
		return fsp_set_err(err, len, "%s: invalid duration '%s' (up to 10s, e.g. 200us)",
				   key, v);
	return 0;
}

/* "A<sep>B" into a and b (the part before sep must fit 63 bytes). */
static int split(const char *v, int sep, char *a, size_t alen, const char **b)
{
	const char *s = strchr(v, sep);
	if (!s || s == v || !s[1] || (size_t)(s - v) >= alen)
		return -1;
	memcpy(a, v, (size_t)(s - v));
	a[s - v] = '\0';
	*b = s + 1;
	return 0;
}

int fsp_model_parse(const char *spec, struct fsp_model_cfg *cfg, char *err, size_t errlen)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->streams = 8;
	cfg->seed = 1;
	char *copy = strdup(spec ? spec : "");
	if (!copy)
		return fsp_set_err(err, errlen, "out of memory");
	int rc = 0, any = 0;
	unsigned seen = 0;
	char *save = NULL;
	static const char *const keys[] = { "read", "write", "switch", "streams", "raw",
					    "flush", "cache", "drain", "jitter", "seed" };
	for (char *f = strtok_r(copy, ",", &save); f && !rc; f = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(f, '=');
		if (!eq || eq == f || !eq[1]) {
			rc = fsp_set_err(err, errlen, "'%s' is not KEY=VALUE (read, write, switch, "
					 "streams, raw, flush, cache, drain, jitter, seed)", f);
			break;
		}
		*eq = '\0';
		const char *v = eq + 1;
		unsigned k;
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (!strcmp(f, keys[k]))
				break;
		if (k == sizeof(keys) / sizeof(keys[0])) {
			rc = fsp_set_err(err, errlen, "unknown knob '%s' (read, write, switch, "
					 "streams, raw, flush, cache, drain, jitter, seed)", f);
			break;
		}
		if (seen & (1u << k)) {
			rc = fsp_set_err(err, errlen, "'%s' given twice", f);
			break;
		}
		seen |= 1u << k;
		any = 1;
		char a[64];
		const char *b;
		char *end;
		unsigned long long n;
		switch (k) {
		case 0: rc = dur(f, v, &cfg->read_ns, err, errlen); break;
		case 1: rc = dur(f, v, &cfg->write_ns, err, errlen); break;
		case 2: rc = dur(f, v, &cfg->switch_ns, err, errlen); break;
		case 3:
			errno = 0;
			n = strtoull(v, &end, 10);
			if (errno || *end || *v == '-' || n < 1 || n > FSP_MODEL_MAX_STREAMS)
				rc = fsp_set_err(err, errlen, "streams: invalid count '%s' (1..%d)",
						 v, FSP_MODEL_MAX_STREAMS);
			else
				cfg->streams = (unsigned)n;
			break;
		case 4:
			if (split(v, '@', a, sizeof(a), &b)) {
				rc = fsp_set_err(err, errlen,
						 "raw: '%s' is not COST@AGE (e.g. 300us@5ms)", v);
				break;
			}
			rc = dur("raw cost", a, &cfg->raw_ns, err, errlen);
			if (!rc)
				rc = dur("raw age", b, &cfg->raw_age_ns, err, errlen);
			break;
		case 5: rc = dur(f, v, &cfg->flush_ns, err, errlen); break;
		case 6:
			if (split(v, ':', a, sizeof(a), &b)) {
				rc = fsp_set_err(err, errlen,
						 "cache: '%s' is not SIZE:COST (e.g. 64M:80us)", v);
				break;
			}
			if (fsp_parse_size(a, &cfg->cache_bytes) || !cfg->cache_bytes) {
				rc = fsp_set_err(err, errlen, "cache: invalid size '%s' (e.g. 64M)",
						 a);
				break;
			}
			rc = dur("cache cost", b, &cfg->cache_ns, err, errlen);
			break;
		case 7: {
			char sz[64];
			size_t l = strlen(v);
			snprintf(sz, sizeof(sz), "%s", v);
			if (l > 2 && !strcmp(v + l - 2, "/s"))
				sz[l - 2] = '\0';
			if (fsp_parse_size(sz, &cfg->drain_bps))
				rc = fsp_set_err(err, errlen, "drain: invalid rate '%s' (SIZE per "
						 "second, e.g. 200M/s)", v);
			break;
		}
		case 8: rc = dur(f, v, &cfg->jitter_ns, err, errlen); break;
		case 9:
			errno = 0;
			n = strtoull(v, &end, 10);
			if (errno || *end || *v == '-')
				rc = fsp_set_err(err, errlen, "seed: invalid number '%s'", v);
			else
				cfg->seed = n;
			break;
		}
	}
	free(copy);
	if (rc)
		return -1;
	if (!any)
		return fsp_set_err(err, errlen, "no knob in '%s' (e.g. switch=200us,flush=2ms)",
				   spec ? spec : "");
	if ((seen & (1u << 7)) && !(seen & (1u << 6)))
		return fsp_set_err(err, errlen,
				   "drain without cache (drain empties the write cache)");
	return 0;
}

void fsp_model_format(const struct fsp_model_cfg *c, char *buf, size_t len)
{
	char a[32], b[32];
	size_t at = 0;
	buf[0] = '\0';
#define PUT(...) do { if (at < len) { int n_ = snprintf(buf + at, len - at, __VA_ARGS__); \
	if (n_ > 0) at += (size_t)n_; } } while (0)
#define DUR(key, v) do { if (v) { fsp_format_duration(v, a, sizeof(a)); \
	PUT("%s%s=%s", at ? "," : "", key, a); } } while (0)
	DUR("read", c->read_ns);
	DUR("write", c->write_ns);
	DUR("switch", c->switch_ns);
	PUT("%sstreams=%u", at ? "," : "", c->streams);
	if (c->raw_ns) {
		fsp_format_duration(c->raw_ns, a, sizeof(a));
		fsp_format_duration(c->raw_age_ns, b, sizeof(b));
		PUT(",raw=%s@%s", a, b);
	}
	DUR("flush", c->flush_ns);
	if (c->cache_bytes) {
		fsp_format_size(c->cache_bytes, a, sizeof(a));
		fsp_format_duration(c->cache_ns, b, sizeof(b));
		PUT(",cache=%s:%s", a, b);
		if (c->drain_bps) {
			fsp_format_size(c->drain_bps, a, sizeof(a));
			PUT(",drain=%s/s", a);
		}
	}
	DUR("jitter", c->jitter_ns);
	PUT(",seed=%llu", (unsigned long long)c->seed);
#undef DUR
#undef PUT
}

struct fsp_model *fsp_model_new(const struct fsp_model_cfg *cfg)
{
	struct fsp_model *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->cfg = *cfg;
	if (m->cfg.streams < 1 || m->cfg.streams > FSP_MODEL_MAX_STREAMS)
		m->cfg.streams = 8;
	if (cfg->raw_ns && !(m->writes = calloc(FSP_MODEL_WRITES, sizeof(*m->writes)))) {
		free(m);
		return NULL;
	}
	/* splitmix64 of the seed: never 0 */
	uint64_t x = cfg->seed + 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	m->rng = (x ^ (x >> 31)) | 1;
	return m;
}

void fsp_model_free(struct fsp_model *m)
{
	if (!m)
		return;
	free(m->writes);
	free(m);
}

void fsp_model_stats(const struct fsp_model *m, struct fsp_model_stats *out)
{
	*out = m->st;
}

/* The stream an IO continues, or a new one in the least recently used slot:
 * its id. */
static uint64_t stream_of(struct fsp_model *m, uint64_t off, uint64_t len)
{
	struct stream *s = NULL, *lru = &m->streams[0];
	/* the last IO's stream first: another tracked stream may end at the
	 * same offset (an old run that this one has caught up with) */
	for (unsigned i = 0; i < m->cfg.streams; i++) {
		struct stream *t = &m->streams[i];
		if (t->id && t->id == m->last_id && t->next == off)
			s = t;
	}
	for (unsigned i = 0; !s && i < m->cfg.streams; i++) {
		struct stream *t = &m->streams[i];
		if (t->id && t->next == off) {
			s = t;
			break;
		}
		if (!t->id || (lru->id && t->used < lru->used))
			lru = t;
	}
	if (!s) {
		s = lru;
		s->id = ++m->next_id;
	}
	s->next = off + len;
	s->used = ++m->seq;
	return s->id;
}

/* Was any byte of [off, off+len) written after now - age? */
static int written_recently(const struct fsp_model *m, uint64_t off, uint64_t len,
			    uint64_t now)
{
	uint64_t n = m->nwrites < FSP_MODEL_WRITES ? m->nwrites : FSP_MODEL_WRITES;
	for (uint64_t i = 0; i < n; i++) {
		const struct recent_write *w = &m->writes[(m->nwrites - 1 - i) % FSP_MODEL_WRITES];
		if (w->at + m->cfg.raw_age_ns <= now)
			break; /* older ones are older still */
		if (w->off < off + len && off < w->off + w->len)
			return 1;
	}
	return 0;
}

uint64_t fsp_model_cost_ns(struct fsp_model *m, enum fsp_model_dir dir, uint64_t offset,
			   uint64_t len, uint64_t now)
{
	const struct fsp_model_cfg *c = &m->cfg;
	uint64_t cost = 0;
	m->st.ios++;
	if (dir == FSP_MODEL_FLUSH) {
		m->st.flushes++;
		m->st.flush_ns += c->flush_ns;
		cost += c->flush_ns;
	} else {
		int w = dir == FSP_MODEL_WRITE;
		uint64_t base = w ? c->write_ns : c->read_ns;
		m->st.base_ns += base;
		cost += base;
		if (w)
			m->st.writes++;
		else
			m->st.reads++;
		uint64_t id = stream_of(m, offset, len);
		if (m->last_id && id != m->last_id && c->switch_ns) {
			m->st.switches++;
			m->st.switch_ns += c->switch_ns;
			cost += c->switch_ns;
		}
		m->last_id = id;
		if (!w && c->raw_ns && written_recently(m, offset, len, now)) {
			m->st.raw_hits++;
			m->st.raw_ns += c->raw_ns;
			cost += c->raw_ns;
		}
		if (w && m->writes) {
			struct recent_write *r = &m->writes[m->nwrites++ % FSP_MODEL_WRITES];
			r->off = offset;
			r->len = len;
			r->at = now;
		}
		if (c->cache_bytes) {
			if (c->drain_bps && now > m->fill_at) {
				double drained = (double)(now - m->fill_at) * 1e-9 * (double)c->drain_bps;
				m->fill = drained >= (double)m->fill ? 0 : m->fill - (uint64_t)drained;
			}
			if (now > m->fill_at)
				m->fill_at = now;
			if (w) {
				if (m->fill + len > c->cache_bytes) {
					m->st.cache_slow++;
					m->st.cache_ns += c->cache_ns;
					cost += c->cache_ns;
				}
				m->fill = m->fill + len > c->cache_bytes ? c->cache_bytes
									 : m->fill + len;
			}
		}
	}
	if (c->jitter_ns) {
		uint64_t x = m->rng;
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		m->rng = x;
		uint64_t j = (x * 0x2545f4914f6cdd1dull) % (c->jitter_ns + 1);
		m->st.jitter_ns += j;
		cost += j;
	}
	return cost;
}
