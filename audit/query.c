/* audit/query.c - record filters, the request join by id, and the table */
#include <string.h>
#include <strings.h>
#include "common/sluice.h"
#include "audit/audit.h"

#define JOIN_BUCKETS_MIN 64  /* grows by doubling, at 2 entries per bucket */
#define DETAIL_RAW_MAX 4096  /* raw bytes gathered for the detail column before escaping */
#define CELL_MAX 1024        /* escaped bytes of one cell */

/* ---- filters ---- */

void
audit_filter_init(struct audit_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->since_ms = INT64_MIN;
	f->until_ms = INT64_MAX;
	f->status = -1;
}

int
audit_filter_status(struct audit_filter *f, const char *s)
{
	size_t n = strlen(s);

	if (n == 3 && s[0] >= '1' && s[0] <= '5' && (s[1] == 'x' || s[1] == 'X') && (s[2] == 'x' || s[2] == 'X')) {
		f->status = s[0] - '0';
		return 0;
	}
	if (n == 3 && s[0] >= '1' && s[0] <= '5' && s[1] >= '0' && s[1] <= '9' && s[2] >= '0' && s[2] <= '9') {
		f->status = (s[0] - '0') * 100 + (s[1] - '0') * 10 + (s[2] - '0');
		return 0;
	}
	return SLUICE_EINVAL;
}

/* <v> is a JSON string equal to <want> (a string holding NUL never equals a C string). */
static int
jeq(json_t *v, const char *want, int nocase)
{
	size_t n = strlen(want);

	if (!json_is_string(v) || json_string_length(v) != n)
		return 0;
	return nocase ? strncasecmp(json_string_value(v), want, n) == 0 : memcmp(json_string_value(v), want, n) == 0;
}

/* <want> is a host or "*.domain" (any name below domain). */
static int
host_match(json_t *v, const char *want)
{
	size_t n, w;
	const char *s;

	if (!json_is_string(v))
		return 0;
	if (want[0] != '*' || want[1] != '.')
		return jeq(v, want, 1);
	s = json_string_value(v);
	n = json_string_length(v);
	w = strlen(want + 1);  /* ".domain" */
	return n > w && strncasecmp(s + n - w, want + 1, w) == 0 && memchr(s, '\0', n) == NULL;
}

/* <list> is "a" or "a,b,c"; is <v> one of them? */
static int
in_list(json_t *v, const char *list)
{
	const char *p = list, *c;
	size_t n;

	if (!json_is_string(v))
		return 0;
	for (;;) {
		c = strchr(p, ',');
		n = c ? (size_t)(c - p) : strlen(p);
		if (json_string_length(v) == n && memcmp(json_string_value(v), p, n) == 0)
			return 1;
		if (c == NULL)
			return 0;
		p = c + 1;
	}
}

/* An array of names, or of {"name": ...} objects, holds <want>. */
static int
names_have(json_t *arr, const char *want)
{
	size_t i;
	json_t *e;

	if (!json_is_array(arr))
		return 0;
	json_array_foreach(arr, i, e) {
		if (jeq(e, want, 0) || (json_is_object(e) && jeq(json_object_get(e, "name"), want, 0)))
			return 1;
	}
	return 0;
}

int
audit_record_has_tool(const json_t *obj, const char *tool)
{
	json_t *batch = json_object_get(obj, "mcp_batch"), *e;
	size_t i;

	if (jeq(json_object_get(obj, "tool"), tool, 0))
		return 1;
	if (!json_is_array(batch))
		return 0;
	json_array_foreach(batch, i, e) {
		if (json_is_object(e) && jeq(json_object_get(e, "tool"), tool, 0))
			return 1;
	}
	return 0;
}

/* The field <k> of <rec>, else of its request <req>. */
static json_t *
field(const struct audit_record *rec, const struct audit_record *req, const char *k)
{
	json_t *v = json_object_get(rec->obj, k);

	if (v == NULL && req != NULL)
		v = json_object_get(req->obj, k);
	return v;
}

int
audit_filter_match(const struct audit_filter *f, const struct audit_record *rec, const struct audit_record *req)
{
	json_t *o = rec->obj, *v;

	if (f->since_ms != INT64_MIN || f->until_ms != INT64_MAX) {
		if (rec->time_ms == INT64_MIN || rec->time_ms < f->since_ms || rec->time_ms > f->until_ms)
			return 0;
	}
	if (f->type != NULL && !in_list(json_object_get(o, "type"), f->type))
		return 0;
	if (f->sandbox != NULL && !jeq(field(rec, req, "sandbox"), f->sandbox, 0))
		return 0;
	if (f->host != NULL) {
		v = json_object_get(o, "host");
		if (v == NULL)
			v = json_object_get(o, "sni");
		if (v == NULL && req != NULL) {
			v = json_object_get(req->obj, "host");
			if (v == NULL)
				v = json_object_get(req->obj, "sni");
		}
		if (!host_match(v, f->host))
			return 0;
	}
	if (f->verdict != NULL) {
		v = json_object_get(o, "verdict");
		if (v == NULL && (rec->kind == AUDIT_KIND_DENIAL || rec->kind == AUDIT_KIND_EXFILTRATION_ATTEMPT)) {
			if (strcmp(f->verdict, "deny") != 0)
				return 0;
		} else {
			if (v == NULL && req != NULL)
				v = json_object_get(req->obj, "verdict");
			if (!jeq(v, f->verdict, 0))
				return 0;
		}
	}
	if (f->secret != NULL && !names_have(json_object_get(o, "secrets"), f->secret) &&
	    !jeq(json_object_get(o, "secret"), f->secret, 0) && !names_have(json_object_get(o, "scrubbed"), f->secret))
		return 0;
	if (f->tool != NULL && !audit_record_has_tool(o, f->tool) &&
	    (req == NULL || !audit_record_has_tool(req->obj, f->tool)))
		return 0;
	if (f->status >= 0) {
		if (rec->status < 0)
			return 0;
		if (f->status < 10 ? rec->status / 100 != f->status : rec->status != f->status)
			return 0;
	}
	return 1;
}

/* ---- the join ---- */

struct join_entry {
	struct join_entry *next;
	struct audit_record rec;  /* a slim copy: the fields a table row and the filters use */
};

struct join_gen {
	struct join_entry **b;
	size_t nb, n;
};

struct audit_join {
	struct join_gen *cur, *old;
};

static size_t
hash_str(const char *s, size_t n)
{
	size_t h = 5381, i;

	for (i = 0; i < n; i++)
		h = h * 33 + (unsigned char)s[i];
	return h;
}

static size_t
bucket_of(const struct join_gen *g, json_t *id)
{
	return hash_str(json_string_value(id), json_string_length(id)) & (g->nb - 1);
}

static struct join_gen *
gen_new(void)
{
	struct join_gen *g = xcalloc(1, sizeof(*g));

	g->nb = JOIN_BUCKETS_MIN;
	g->b = xcalloc(g->nb, sizeof(*g->b));
	return g;
}

static void
gen_grow(struct join_gen *g)
{
	struct join_entry **old = g->b, *e, *next;
	size_t oldnb = g->nb, i, h;

	g->nb *= 2;
	g->b = xcalloc(g->nb, sizeof(*g->b));
	for (i = 0; i < oldnb; i++) {
		for (e = old[i]; e != NULL; e = next) {
			next = e->next;
			h = bucket_of(g, json_object_get(e->rec.obj, "id"));
			e->next = g->b[h];
			g->b[h] = e;
		}
	}
	free(old);
}

static void
gen_free(struct join_gen *g)
{
	struct join_entry *e, *next;
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->nb; i++) {
		for (e = g->b[i]; e != NULL; e = next) {
			next = e->next;
			audit_record_dispose(&e->rec);
			free(e);
		}
	}
	free(g->b);
	free(g);
}

struct audit_join *
audit_join_create(void)
{
	struct audit_join *j = xcalloc(1, sizeof(*j));

	j->cur = gen_new();
	return j;
}

void
audit_join_destroy(struct audit_join *j)
{
	if (j == NULL)
		return;
	gen_free(j->cur);
	gen_free(j->old);
	free(j);
}

/* the members a response, scrub or exfiltration record is shown and filtered by (tool, mcp_batch: --tool) */
static const char *const slim_keys[] = {"type", "id", "sandbox", "host", "sni", "verdict", "method", "path", "tool",
                                        "mcp_batch"};

void
audit_join_add(struct audit_join *j, const struct audit_record *rec)
{
	struct join_entry *e;
	json_t *slim, *v, *id = json_object_get(rec->obj, "id");
	size_t i, h;

	if (rec->kind != AUDIT_KIND_REQUEST || !json_is_string(id))
		return;
	if (j->cur->n >= AUDIT_JOIN_MAX / 2) {
		/* forget the older half: a response that far from its request shows without it */
		gen_free(j->old);
		j->old = j->cur;
		j->cur = gen_new();
	}
	slim = json_object();
	for (i = 0; i < sizeof(slim_keys) / sizeof(slim_keys[0]); i++) {
		v = json_object_get(rec->obj, slim_keys[i]);
		if (v != NULL)
			json_object_set(slim, slim_keys[i], v);
	}
	e = xcalloc(1, sizeof(*e));
	e->rec.obj = slim;
	e->rec.seq = rec->seq;
	e->rec.status = -1;
	e->rec.time_ms = INT64_MIN;
	e->rec.type = json_string_value(json_object_get(slim, AUDIT_FIELD_TYPE));
	e->rec.kind = rec->kind;
	e->rec.id = json_string_value(json_object_get(slim, "id"));
	e->rec.sandbox = json_string_value(json_object_get(slim, "sandbox"));
	e->rec.host = json_string_value(json_object_get(slim, "host"));
	e->rec.sni = json_string_value(json_object_get(slim, "sni"));
	e->rec.verdict = json_string_value(json_object_get(slim, AUDIT_FIELD_VERDICT));
	e->rec.verdict_kind = rec->verdict_kind;
	e->rec.method = json_string_value(json_object_get(slim, "method"));
	e->rec.path = json_string_value(json_object_get(slim, "path"));
	if (j->cur->n >= 2 * j->cur->nb)
		gen_grow(j->cur);
	h = bucket_of(j->cur, id);
	e->next = j->cur->b[h];
	j->cur->b[h] = e;
	j->cur->n++;
}

static const struct audit_record *
gen_find(const struct join_gen *g, json_t *id)
{
	const struct join_entry *e;

	if (g == NULL)
		return NULL;
	for (e = g->b[bucket_of(g, id)]; e != NULL; e = e->next) {
		json_t *eid = json_object_get(e->rec.obj, "id");

		if (json_string_length(eid) == json_string_length(id) &&
		    memcmp(json_string_value(eid), json_string_value(id), json_string_length(id)) == 0)
			return &e->rec;
	}
	return NULL;
}

const struct audit_record *
audit_join_find(const struct audit_join *j, const struct audit_record *rec)
{
	json_t *id = json_object_get(rec->obj, "id");
	const struct audit_record *r;

	if (!json_is_string(id) || rec->kind == AUDIT_KIND_REQUEST)
		return NULL;
	r = gen_find(j->cur, id);
	return r != NULL ? r : gen_find(j->old, id);
}

/* ---- the table ---- */

struct col {
	const char *title;
	size_t width;
	int right;
};

static const struct col cols[] = {
	{"TIME", 24, 0}, {"SEQ", 8, 1}, {"TYPE", 20, 0}, {"SANDBOX", 16, 0}, {"VERDICT", 7, 0},
	{"STATUS", 6, 1}, {"METHOD", 7, 0}, {"HOST", 32, 0}, {"PATH/DETAIL", 120, 0},
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))

/* Prints one cell (escaped, padded unless last). */
static void
cell(FILE *out, size_t i, const char *s, size_t n)
{
	char buf[CELL_MAX];
	size_t w;

	buf[0] = '\0';
	w = audit_term_escape(buf, sizeof(buf), s, n, cols[i].width);
	if (i + 1 == NCOLS) {
		fprintf(out, "%s\n", buf);
		return;
	}
	if (cols[i].right)
		fprintf(out, "%*s%s  ", (int)(cols[i].width - w), "", buf);
	else
		fprintf(out, "%s%*s  ", buf, (int)(cols[i].width - w), "");
}

static void
cell_json(FILE *out, size_t i, json_t *v)
{
	char num[32];
	int n;

	if (json_is_string(v)) {
		cell(out, i, json_string_value(v), json_string_length(v));
	} else if (json_is_integer(v)) {
		n = snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		cell(out, i, num, (size_t)n);
	} else {
		cell(out, i, "-", 1);
	}
}

void
audit_table_header(FILE *out)
{
	size_t i;

	for (i = 0; i < NCOLS; i++)
		cell(out, i, cols[i].title, strlen(cols[i].title));
}

struct dbuf {
	char b[DETAIL_RAW_MAX];
	size_t n;
};

static void
dput(struct dbuf *d, const char *s, size_t n)
{
	if (n > sizeof(d->b) - d->n)
		n = sizeof(d->b) - d->n;
	memcpy(d->b + d->n, s, n);
	d->n += n;
}

/* Appends " key=value" (value: string, number, bool, or a list of names / {name, place}). */
static void
dkv(struct dbuf *d, const char *label, json_t *v)
{
	char num[32];
	size_t i;
	json_t *e, *nm, *pl;
	int n;

	if (v == NULL || json_is_null(v))
		return;
	if (d->n > 0)
		dput(d, SLUICE_LIT(" "));
	if (label != NULL) {
		dput(d, label, strlen(label));
		dput(d, SLUICE_LIT("="));
	}
	if (json_is_string(v)) {
		dput(d, json_string_value(v), json_string_length(v));
	} else if (json_is_integer(v)) {
		n = snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		dput(d, num, (size_t)n);
	} else if (json_is_boolean(v)) {
		dput(d, json_is_true(v) ? "true" : "false", json_is_true(v) ? 4 : 5);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, e) {
			if (i > 0)
				dput(d, SLUICE_LIT(","));
			nm = json_is_object(e) ? json_object_get(e, "name") : e;
			pl = json_is_object(e) ? json_object_get(e, "place") : NULL;
			if (json_is_string(nm))
				dput(d, json_string_value(nm), json_string_length(nm));
			if (json_is_string(pl)) {
				dput(d, SLUICE_LIT("@"));
				dput(d, json_string_value(pl), json_string_length(pl));
			}
		}
	}
}

static void
detail(struct dbuf *d, const struct audit_record *rec, const struct audit_record *req)
{
	json_t *o = rec->obj;

	switch (rec->kind) {
	case AUDIT_KIND_REQUEST:
		dkv(d, NULL, json_object_get(o, "path"));
		dkv(d, "mcp", json_object_get(o, "mcp_method"));
		dkv(d, "tool", json_object_get(o, "tool"));
		dkv(d, "rpc_id", json_object_get(o, "rpc_id"));
		if (json_is_array(json_object_get(o, "mcp_batch"))) {
			json_t *nb = json_integer((json_int_t)json_array_size(json_object_get(o, "mcp_batch")));

			dkv(d, "batch", nb);
			json_decref(nb);
		}
		dkv(d, "secrets", json_object_get(o, "secrets"));
		if (rec->verdict_kind != AUDIT_VERDICT_ALLOW)
			dkv(d, "reason", json_object_get(o, "reason"));
		break;
	case AUDIT_KIND_RESPONSE:
		dkv(d, NULL, req != NULL ? json_object_get(req->obj, "path") : NULL);
		dkv(d, "up", json_object_get(o, "bytes_up"));
		dkv(d, "down", json_object_get(o, "bytes_down"));
		dkv(d, "ms", json_object_get(o, "duration_ms"));
		dkv(d, "scrubbed", json_object_get(o, "scrubbed"));
		dkv(d, "removed", json_object_get(o, "removed"));  /* list entries an MCP list result lost */
		dkv(d, "reason", json_object_get(o, "reason"));  /* the gateway ended it */
		break;
	case AUDIT_KIND_CONNECTION:
	case AUDIT_KIND_DENIAL:
	case AUDIT_KIND_NO_REQUEST:
		dkv(d, "sni", json_object_get(o, "sni"));
		dkv(d, "dest", json_object_get(o, "dest"));
		dkv(d, "rule", json_object_get(o, "rule"));
		dkv(d, "reason", json_object_get(o, "reason"));
		break;
	case AUDIT_KIND_DNS:
		dkv(d, NULL, json_object_get(o, "qtype"));
		dkv(d, NULL, json_object_get(o, "answer"));
		break;
	case AUDIT_KIND_EXFILTRATION_ATTEMPT:
		dkv(d, "secret", json_object_get(o, "secret"));
		dkv(d, "place", json_object_get(o, "place"));
		dkv(d, "rule", json_object_get(o, "rule"));
		break;
	case AUDIT_KIND_SCRUB:
		dkv(d, "scrubbed", json_object_get(o, "secrets"));
		break;
	case AUDIT_KIND_APPROVAL:
		dkv(d, "decision", json_object_get(o, "decision"));
		dkv(d, "by", json_object_get(o, "by"));
		break;
	case AUDIT_KIND_CONFIG_RELOAD:
		dkv(d, "result", json_object_get(o, "result"));
		dkv(d, "generation", json_object_get(o, "generation"));
		dkv(d, "error", json_object_get(o, "error"));
		break;
	case AUDIT_KIND_CHECKPOINT:
		dkv(d, "head_seq", json_object_get(o, "head_seq"));
		break;
	case AUDIT_KIND_START:
		dkv(d, "run", json_object_get(o, "run"));
		dkv(d, "version", json_object_get(o, "version"));
		dkv(d, "pid", json_object_get(o, "pid"));
		dkv(d, "recovered_bytes", json_object_get(o, "recovered_bytes"));
		break;
	case AUDIT_KIND_STOP:
		dkv(d, "reason", json_object_get(o, "reason"));
		dkv(d, "records", json_object_get(o, "records"));
		break;
	case AUDIT_KIND_UNKNOWN:
	case AUDIT_KIND_REVOCATION:
	case AUDIT_KIND_COUNT:
		break;
	}
}

void
audit_table_row(FILE *out, const struct audit_record *rec, const struct audit_record *req)
{
	struct dbuf d;
	json_t *host, *verdict;

	d.n = 0;
	cell_json(out, 0, json_object_get(rec->obj, "time"));
	cell_json(out, 1, json_object_get(rec->obj, "seq"));
	cell_json(out, 2, json_object_get(rec->obj, "type"));
	cell_json(out, 3, field(rec, req, "sandbox"));
	verdict = field(rec, req, "verdict");
	if (verdict == NULL && (rec->kind == AUDIT_KIND_DENIAL || rec->kind == AUDIT_KIND_EXFILTRATION_ATTEMPT))
		cell(out, 4, "deny", 4);  /* refusals by their nature */
	else
		cell_json(out, 4, verdict);
	cell_json(out, 5, json_object_get(rec->obj, "status"));
	cell_json(out, 6, field(rec, req, "method"));
	host = field(rec, req, "host");
	cell_json(out, 7, host != NULL ? host : field(rec, req, "sni"));
	detail(&d, rec, req);
	cell(out, 8, d.b, d.n);
}
