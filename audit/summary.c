/*
 * audit/summary.c - per sandbox: requests, denials, exfiltration attempts,
 * hosts contacted, secrets used; per MCP tool: calls, denials, holds, and
 * the sandboxes that called it.
 */
#include <string.h>
#include "common/sluice.h"
#include "audit/audit.h"

#define OTHER "(other)"
#define SANDBOX_COL_MAX 40
#define SECRETS_COL_MAX 80
#define HOSTS_COL_MAX 4000
#define LIST_BUF (HOSTS_COL_MAX + 64)

/* A string -> count map (open addressing), bounded by <max> names; the rest count under OTHER. */
struct name {
	char *s;  /* NULL: empty slot */
	size_t n;
	uint64_t count;
	void *val;
};

struct namemap {
	struct name *v;
	size_t cap, len, max;
};

struct sandbox {
	uint64_t requests, denials, exfil;
	struct namemap hosts, secrets;
};

struct tool {
	uint64_t denials, holds;
	struct namemap sandboxes;  /* count: calls by that sandbox */
};

struct audit_summary {
	struct namemap sandboxes;  /* val: struct sandbox */
	struct namemap tools;      /* val: struct tool; count: calls */
};

static size_t
hash(const char *s, size_t n)
{
	size_t h = 5381, i;

	for (i = 0; i < n; i++)
		h = h * 33 + (unsigned char)s[i];
	return h;
}

static struct name *
slot(struct namemap *m, const char *s, size_t n)
{
	size_t i = hash(s, n) & (m->cap - 1);

	while (m->v[i].s != NULL && (m->v[i].n != n || memcmp(m->v[i].s, s, n) != 0))
		i = (i + 1) & (m->cap - 1);
	return &m->v[i];
}

static void
grow(struct namemap *m)
{
	struct name *old = m->v;
	size_t oldcap = m->cap, i;

	m->cap = m->cap ? m->cap * 2 : 16;
	m->v = xcalloc(m->cap, sizeof(*m->v));
	for (i = 0; i < oldcap; i++)
		if (old[i].s != NULL)
			*slot(m, old[i].s, old[i].n) = old[i];
	free(old);
}

/* The entry for <s>/<n> (made with count 0), or OTHER's once <max> names are held. */
static struct name *
lookup(struct namemap *m, const char *s, size_t n)
{
	struct name *e;

	if (m->cap == 0 || (m->len + 1) * 4 > m->cap * 3)
		grow(m);
	e = slot(m, s, n);
	if (e->s != NULL)
		return e;
	if (m->len >= m->max && (n != sizeof(OTHER) - 1 || memcmp(s, OTHER, n) != 0))
		return lookup(m, OTHER, sizeof(OTHER) - 1);
	e->s = xmalloc(n + 1);
	memcpy(e->s, s, n);
	e->s[n] = '\0';
	e->n = n;
	m->len++;
	return e;
}

enum map_vals { VAL_NONE = 0, VAL_SANDBOX = 1, VAL_TOOL = 2 };

static void
map_free(struct namemap *m, enum map_vals vals)
{
	struct sandbox *sb;
	struct tool *t;
	size_t i;

	for (i = 0; i < m->cap; i++) {
		if (m->v[i].s == NULL)
			continue;
		free(m->v[i].s);
		if (vals == VAL_SANDBOX && (sb = m->v[i].val) != NULL) {
			map_free(&sb->hosts, VAL_NONE);
			map_free(&sb->secrets, VAL_NONE);
			free(sb);
		} else if (vals == VAL_TOOL && (t = m->v[i].val) != NULL) {
			map_free(&t->sandboxes, VAL_NONE);
			free(t);
		}
	}
	free(m->v);
}

struct audit_summary *
audit_summary_create(void)
{
	struct audit_summary *s = xcalloc(1, sizeof(*s));

	s->sandboxes.max = AUDIT_SUMMARY_SANDBOXES_MAX;
	s->tools.max = AUDIT_SUMMARY_NAMES_MAX;
	return s;
}

void
audit_summary_destroy(struct audit_summary *s)
{
	if (s == NULL)
		return;
	map_free(&s->sandboxes, VAL_SANDBOX);
	map_free(&s->tools, VAL_TOOL);
	free(s);
}

static void
count_name(struct namemap *m, json_t *v)
{
	if (json_is_string(v))
		lookup(m, json_string_value(v), json_string_length(v))->count++;
}

/* One call of the tool named by <name> (a string; else nothing) by sandbox <sbv>: <verdict>, held or not. */
static void
count_tool(struct audit_summary *s, json_t *name, json_t *sbv, json_t *verdict, int held)
{
	struct name *ent;
	struct tool *t;

	if (!json_is_string(name))
		return;
	ent = lookup(&s->tools, json_string_value(name), json_string_length(name));
	if (ent->val == NULL) {
		t = xcalloc(1, sizeof(*t));
		t->sandboxes.max = AUDIT_SUMMARY_NAMES_MAX;
		ent->val = t;
	}
	t = ent->val;
	ent->count++;
	if (audit_verdict_parse(json_string_value(verdict)) == AUDIT_VERDICT_DENY)
		t->denials++;
	if (held)
		t->holds++;
	count_name(&t->sandboxes, sbv);
}

/* The tools a request record names: "tool", or each element of "mcp_batch" (with its own verdict, if given). */
static void
count_tools(struct audit_summary *s, const struct audit_record *rec, json_t *sbv)
{
	json_t *batch = json_object_get(rec->obj, "mcp_batch"), *verdict = json_object_get(rec->obj, "verdict"), *e, *v;
	int held = json_object_get(rec->obj, "hold") != NULL;
	size_t i;

	count_tool(s, json_object_get(rec->obj, "tool"), sbv, verdict, held);
	if (!json_is_array(batch))
		return;
	json_array_foreach(batch, i, e) {
		if (!json_is_object(e))
			continue;
		v = json_object_get(e, "verdict");
		count_tool(s, json_object_get(e, "tool"), sbv, v != NULL ? v : verdict, held);
	}
}

void
audit_summary_add(struct audit_summary *s, const struct audit_record *rec)
{
	json_t *sbv = json_object_get(rec->obj, "sandbox"), *host, *e;
	struct name *ent;
	struct sandbox *sb;
	size_t i;
	int deny = rec->verdict_kind == AUDIT_VERDICT_DENY;

	if (!json_is_string(sbv))
		return;
	if (rec->kind != AUDIT_KIND_REQUEST && rec->kind != AUDIT_KIND_DENIAL && rec->kind != AUDIT_KIND_CONNECTION &&
	    rec->kind != AUDIT_KIND_EXFILTRATION_ATTEMPT)
		return;
	ent = lookup(&s->sandboxes, json_string_value(sbv), json_string_length(sbv));
	if (ent->val == NULL) {
		sb = xcalloc(1, sizeof(*sb));
		sb->hosts.max = AUDIT_SUMMARY_NAMES_MAX;
		sb->secrets.max = AUDIT_SUMMARY_NAMES_MAX;
		ent->val = sb;
	}
	sb = ent->val;
	ent->count++;
	host = json_object_get(rec->obj, "host");
	if (host == NULL)
		host = json_object_get(rec->obj, "sni");
	if (rec->kind == AUDIT_KIND_REQUEST) {
		count_tools(s, rec, sbv);
		sb->requests++;
		if (deny)
			sb->denials++;
		else if (rec->verdict_kind == AUDIT_VERDICT_ALLOW)
			count_name(&sb->hosts, host);
		if (rec->verdict_kind == AUDIT_VERDICT_ALLOW && json_is_array(json_object_get(rec->obj, "secrets")))
			json_array_foreach(json_object_get(rec->obj, "secrets"), i, e)
				count_name(&sb->secrets, json_is_object(e) ? json_object_get(e, "name") : e);
	} else if (rec->kind == AUDIT_KIND_DENIAL) {
		sb->denials++;
	} else if (rec->kind == AUDIT_KIND_CONNECTION) {
		if (deny)
			sb->denials++;
		else if (rec->verdict_kind == AUDIT_VERDICT_ALLOW)
			count_name(&sb->hosts, host);  /* a passthrough tunnel */
	} else {
		sb->exfil++;
	}
}

static int
cmp_name(const void *a, const void *b)
{
	const struct name *x = *(const struct name *const *)a, *y = *(const struct name *const *)b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->s, y->s, n);

	return c != 0 ? c : (x->n > y->n) - (x->n < y->n);
}

static int
cmp_count(const void *a, const void *b)
{
	const struct name *x = *(const struct name *const *)a, *y = *(const struct name *const *)b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return cmp_name(a, b);
}

/* The entries of <m>, sorted; the array is the caller's to free. */
static struct name **
sorted(const struct namemap *m, int (*cmp)(const void *, const void *))
{
	struct name **v = xcalloc(m->len + 1, sizeof(*v));
	size_t i, k = 0;

	for (i = 0; i < m->cap; i++)
		if (m->v[i].s != NULL)
			v[k++] = &m->v[i];
	qsort(v, k, sizeof(*v), cmp);
	return v;
}

/* "a (3), b (1)" escaped into <out>, at most <width> columns; returns the columns. */
static size_t
list(char *out, size_t cap, const struct namemap *m, size_t width)
{
	struct name **v = sorted(m, cmp_count);
	char num[32];
	size_t i, cols = 0;

	out[0] = '\0';
	for (i = 0; i < m->len && cols < width; i++) {
		if (i > 0)
			cols += audit_term_escape(out, cap, ", ", 2, width - cols);
		cols += audit_term_escape(out, cap, v[i]->s, v[i]->n, width - cols);
		snprintf(num, sizeof(num), " (%llu)", (unsigned long long)v[i]->count);
		if (cols < width)
			cols += audit_term_escape(out, cap, num, strlen(num), width - cols);
	}
	if (m->len == 0)
		cols = audit_term_escape(out, cap, "-", 1, width);
	free(v);
	return cols;
}

static void
print_tools(struct audit_summary *s, FILE *out)
{
	struct name **v = sorted(&s->tools, cmp_name);
	char name[SANDBOX_COL_MAX * 2], sbs[LIST_BUF];
	size_t i, wname = 4, w;
	struct tool *t;

	for (i = 0; i < s->tools.len; i++) {
		name[0] = '\0';
		w = audit_term_escape(name, sizeof(name), v[i]->s, v[i]->n, SANDBOX_COL_MAX);
		wname = w > wname ? w : wname;
	}
	fprintf(out, "\n%-*s  %8s  %7s  %5s  %s\n", (int)wname, "TOOL", "CALLS", "DENIALS", "HELD", "SANDBOXES");
	for (i = 0; i < s->tools.len; i++) {
		t = v[i]->val;
		name[0] = '\0';
		audit_term_escape(name, sizeof(name), v[i]->s, v[i]->n, SANDBOX_COL_MAX);
		list(sbs, sizeof(sbs), &t->sandboxes, HOSTS_COL_MAX);
		fprintf(out, "%-*s  %8llu  %7llu  %5llu  %s\n", (int)wname, name, (unsigned long long)v[i]->count,
		        (unsigned long long)t->denials, (unsigned long long)t->holds, sbs);
	}
	free(v);
}

void
audit_summary_print(struct audit_summary *s, FILE *out)
{
	struct name **v = sorted(&s->sandboxes, cmp_name);
	char name[SANDBOX_COL_MAX * 2], sec[LIST_BUF], hosts[LIST_BUF];
	size_t i, wname = 7, wsec = 7, w;
	struct sandbox *sb;

	for (i = 0; i < s->sandboxes.len; i++) {
		sb = v[i]->val;
		name[0] = '\0';
		w = audit_term_escape(name, sizeof(name), v[i]->s, v[i]->n, SANDBOX_COL_MAX);
		wname = w > wname ? w : wname;
		w = list(sec, sizeof(sec), &sb->secrets, SECRETS_COL_MAX);
		wsec = w > wsec ? w : wsec;
	}
	fprintf(out, "%-*s  %8s  %7s  %12s  %-*s  %s\n", (int)wname, "SANDBOX", "REQUESTS", "DENIALS", "EXFILTRATION",
	        (int)wsec, "SECRETS", "HOSTS");
	for (i = 0; i < s->sandboxes.len; i++) {
		sb = v[i]->val;
		name[0] = '\0';
		audit_term_escape(name, sizeof(name), v[i]->s, v[i]->n, SANDBOX_COL_MAX);
		list(sec, sizeof(sec), &sb->secrets, SECRETS_COL_MAX);
		list(hosts, sizeof(hosts), &sb->hosts, HOSTS_COL_MAX);
		fprintf(out, "%-*s  %8llu  %7llu  %12llu  %-*s  %s\n", (int)wname, name, (unsigned long long)sb->requests,
		        (unsigned long long)sb->denials, (unsigned long long)sb->exfil, (int)wsec, sec, hosts);
	}
	if (s->sandboxes.len == 0)
		fprintf(out, "(no records)\n");
	free(v);
	if (s->tools.len > 0)
		print_tools(s, out);
}
