/*
 * policy/mcp_scan.c - list results filtered without a jansson tree
 * (policy/mcp.h, "The list-result scanner").
 *
 * A recursive descent over the bytes, bounded to POLICY_JSON_DEPTH_MAX
 * levels.  Every value is validated as jansson would read it with
 * JSON_REJECT_DUPLICATES; what the scanner is not sure jansson reads the
 * same way (an integer of 19 digits, a real with an exponent, \u0000, a
 * surrogate pair, an object of more keys than it tracks) stops it with
 * "not sure", and the caller reads the text with jansson instead.  So the
 * scanner only ever accepts a subset of what the reader accepts, and on that
 * subset it reads the same members and keeps the same entries (the
 * predicate is policy_mcp_entry_kept, shared with policy_mcp_list_filter).
 *
 * Paths that matter: the message's members (jsonrpc, id, result: anything
 * else is not sure), result's members "tools", "resources" and "prompts"
 * when they are arrays (each element's byte range and whether it is kept),
 * and in each element object its "name" (or "uri") decoded.  A key that
 * folds to one of these (common/fold.h) is noted as the reader notes it.
 */
#include <stdlib.h>
#include <string.h>

#include "common/fold.h"
#include "common/sluice.h"
#include "cond_int.h"
#include "mcp_int.h"

#define NOT_SURE (-2)
#define NOMEM (-1)
#define INT_DIGITS_MAX 18  /* an integer of at most 18 digits fits a json_int_t (jansson's long long) */

static const enum policy_mcp_method lists[3] = {POLICY_MCP_M_TOOLS_LIST, POLICY_MCP_M_RESOURCES_LIST,
                                                POLICY_MCP_M_PROMPTS_LIST};

enum role {
	ROLE_OTHER = 0,
	ROLE_ROOT,    /* the message */
	ROLE_RESULT,  /* its result */
	ROLE_ENTRY,   /* an element object of a list */
};

struct scan {
	struct policy_mcp_scan *sc;
	const struct policy *p;
	const struct policy_host *h;
	const char *s;
	size_t n, i;
	int depth;
	/* ROLE_ROOT */
	int seen_version, seen_result;
	/* the entry being read (entries do not nest: only result's lists hold them) */
	int list;              /* index in lists[] */
	int name_ok;           /* the field is a string, decoded in sc->_name */
	size_t name_len;
	int name_amb;
};

void
policy_mcp_scan_init(struct policy_mcp_scan *sc)
{
	memset(sc, 0, sizeof(*sc));
}

void
policy_mcp_scan_dispose(struct policy_mcp_scan *sc)
{
	free(sc->_ent);
	free(sc->out);
	free(sc->_keys);
	free(sc->_kbuf);
	free(sc->_name);
	free(sc->_vc);
	memset(sc, 0, sizeof(*sc));
}

static void
ws(struct scan *x)
{
	while (x->i < x->n && (x->s[x->i] == ' ' || x->s[x->i] == '\t' || x->s[x->i] == '\n' || x->s[x->i] == '\r'))
		x->i++;
}

static int
hex4(const char *s, unsigned *v)
{
	unsigned r = 0;
	int k;

	for (k = 0; k < 4; k++) {
		char c = s[k];

		r <<= 4;
		if (c >= '0' && c <= '9')
			r |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			r |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			r |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*v = r;
	return 0;
}

/* The length of the valid UTF-8 sequence at <s> (before <e>) that starts with a byte >= 0x80, or 0 (invalid). */
static size_t
utf8_len(const unsigned char *s, const unsigned char *e)
{
	unsigned c = s[0], cp;
	size_t k, len;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if ((size_t)(e - s) < len)
		return 0;
	for (k = 1; k < len; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[k] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* Appends <c> (a code point below 0xd800 or between 0xe000 and 0xffff) as UTF-8 to <out> while it fits. */
static void
put_cp(char *out, size_t cap, size_t *o, unsigned c)
{
	char b[3];
	size_t k, m;

	if (c < 0x80) {
		b[0] = (char)c;
		m = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | (c >> 6));
		b[1] = (char)(0x80 | (c & 0x3f));
		m = 2;
	} else {
		b[0] = (char)(0xe0 | (c >> 12));
		b[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		b[2] = (char)(0x80 | (c & 0x3f));
		m = 3;
	}
	for (k = 0; k < m; k++, (*o)++)
		if (out != NULL && *o < cap)
			out[*o] = b[k];
}

/*
 * A string at x->i (its opening quote).  Moves past it; its decoded bytes
 * go to <out>/<cap> while they fit, *<dlen> their whole count; *<raw> and
 * *<rawlen> the bytes between the quotes, *<esc> 1 if it has an escape.
 * 0, or NOT_SURE (invalid, or an escape the scanner leaves to jansson).
 */
static int
string(struct scan *x, char *out, size_t cap, size_t *dlen, const char **raw, size_t *rawlen, int *esc)
{
	const unsigned char *s = (const unsigned char *)x->s, *e = s + x->n;
	size_t i = x->i + 1, o = 0, start = i;

	*esc = 0;
	for (;;) {
		size_t run = i;

		while (i < x->n && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
			i++;
		if (out != NULL && i > run && o < cap)
			memcpy(out + o, s + run, i - run <= cap - o ? i - run : cap - o);
		o += i - run;
		if (i >= x->n)
			return NOT_SURE;
		if (s[i] == '"')
			break;
		if (s[i] < 0x20)
			return NOT_SURE;
		if (s[i] >= 0x80) {
			size_t k, len = utf8_len(s + i, e);

			if (len == 0)
				return NOT_SURE;
			for (k = 0; k < len; k++, o++)
				if (out != NULL && o < cap)
					out[o] = (char)s[i + k];
			i += len;
			continue;
		}
		/* a backslash */
		*esc = 1;
		if (i + 1 >= x->n)
			return NOT_SURE;
		switch (s[i + 1]) {
		case '"': case '\\': case '/':
			put_cp(out, cap, &o, s[i + 1]);
			break;
		case 'b':
			put_cp(out, cap, &o, '\b');
			break;
		case 'f':
			put_cp(out, cap, &o, '\f');
			break;
		case 'n':
			put_cp(out, cap, &o, '\n');
			break;
		case 'r':
			put_cp(out, cap, &o, '\r');
			break;
		case 't':
			put_cp(out, cap, &o, '\t');
			break;
		case 'u': {
			unsigned v;

			/* \u0000 (jansson refuses it) and surrogates (pairs, or lone: refused) are jansson's to read */
			if (i + 6 > x->n || hex4((const char *)s + i + 2, &v) != 0 || v == 0 || (v >= 0xd800 && v <= 0xdfff))
				return NOT_SURE;
			put_cp(out, cap, &o, v);
			i += 4;
			break;
		}
		default:
			return NOT_SURE;
		}
		i += 2;
	}
	*raw = x->s + start;
	*rawlen = i - start;
	*dlen = o;
	x->i = i + 1;
	return 0;
}

/* A number at x->i, as the JSON grammar has it; NOT_SURE unless jansson reads it exactly and without an error. */
static int
number(struct scan *x, int *integer)
{
	const char *s = x->s;
	size_t i = x->i, d0, digits = 0;

	*integer = 1;
	if (s[i] == '-')
		i++;
	d0 = i;
	if (i >= x->n || s[i] < '0' || s[i] > '9')
		return NOT_SURE;
	if (s[i] == '0')
		i++;
	else
		while (i < x->n && s[i] >= '0' && s[i] <= '9')
			i++;
	digits = i - d0;
	if (i < x->n && s[i] == '.') {
		size_t f = ++i;

		*integer = 0;
		while (i < x->n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == f)
			return NOT_SURE;
		digits += i - f;
	}
	if (i < x->n && (s[i] == 'e' || s[i] == 'E'))
		return NOT_SURE;  /* a real with an exponent: whether a double holds it is the prescan's question */
	/* integers jansson holds in a long long; reals of at most 15 digits a double holds exactly (cond_json.c) */
	if (digits > (*integer ? INT_DIGITS_MAX : POLICY_JSON_REAL_DIGITS))
		return NOT_SURE;
	x->i = i;
	return 0;
}

static int
literal(struct scan *x, const char *lit, size_t n)
{
	if (x->n - x->i < n || memcmp(x->s + x->i, lit, n) != 0)
		return NOT_SURE;
	x->i += n;
	return 0;
}

/* At the '{' or '[' at x->i: enters it; 1 when it is empty (<close> is next), 0 when something is in it, NOT_SURE
 * past POLICY_JSON_DEPTH_MAX. */
static int
enter(struct scan *x, char close)
{
	if (++x->depth > POLICY_JSON_DEPTH_MAX)
		return NOT_SURE;
	x->i++;
	ws(x);
	return x->i < x->n && x->s[x->i] == close;
}

/* After a member or an element: 1 when another follows (its comma taken), 0 at <close>, NOT_SURE otherwise. */
static int
more(struct scan *x, char close)
{
	ws(x);
	if (x->i < x->n && x->s[x->i] == ',') {
		x->i++;
		ws(x);
		return 1;
	}
	return x->i < x->n && x->s[x->i] == close ? 0 : NOT_SURE;
}

/* Past the <close> more() stopped at. */
static void
leave(struct scan *x)
{
	x->i++;
	x->depth--;
}

static int value(struct scan *x, enum role role);

static int
key_is(const char *k, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(k, lit, n) == 0;
}

/* The key just read (decoded <k>/<n>) is not among this object's keys (keys[base..]): it is recorded. */
static int
key_new(struct scan *x, size_t base, const char *k, size_t n, int esc)
{
	struct policy_mcp_scan *sc = x->sc;
	size_t j;

	/* linear: a larger object goes to jansson's hash table, so a hostile text costs O(its length * the bound) */
	if (sc->_nkeys - base >= POLICY_MCP_SCAN_OBJ_KEYS || sc->_nkeys == POLICY_MCP_SCAN_KEYS)
		return NOT_SURE;
	for (j = base; j < sc->_nkeys; j++)
		if (sc->_keys[j].len == n && memcmp(sc->_keys[j].p, k, n) == 0)
			return NOT_SURE;  /* a duplicate: the reader refuses the text */
	if (esc) {
		/* decoded into the stack buffer: copy it where it stays until the object closes */
		if (POLICY_MCP_SCAN_KEYBUF - sc->_kused < n)
			return NOT_SURE;
		memcpy(sc->_kbuf + sc->_kused, k, n);
		k = sc->_kbuf + sc->_kused;
		sc->_kused += n;
	}
	sc->_keys[sc->_nkeys].p = k;
	sc->_keys[sc->_nkeys].len = n;
	sc->_nkeys++;
	return 0;
}

/* Where a member with key <k>/<n> of an object of <role> goes: its value's role; *<list> for a list. */
static enum role
member_role(struct scan *x, enum role role, const char *k, size_t n, int *list)
{
	size_t j;

	switch (role) {
	case ROLE_ROOT:
		return ROLE_OTHER;
	case ROLE_RESULT:
		for (j = 0; j < 3; j++) {
			const char *lk = policy_mcp_list_key(lists[j]);

			if (key_is(k, n, lk)) {
				*list = (int)j;
				return ROLE_RESULT;  /* the caller sees the list by *list */
			}
			if (sluice_fold_eq(k, n, lk, strlen(lk)))
				x->sc->_amb[j] = 1;
		}
		return ROLE_OTHER;
	default:
		return ROLE_OTHER;
	}
}

/* The list array (result's member lists[<list>]) at x->i: each element recorded. */
static int
list_array(struct scan *x, int list)
{
	struct policy_mcp_scan *sc = x->sc;
	size_t first = sc->_nent;
	int rc;

	sc->_cand[list].is_array = 1;
	sc->_cand[list].open = x->i;
	sc->_cand[list].first = first;
	if ((rc = enter(x, ']')) != 0)
		goto close;
	do {
		struct policy_mcp_scan_entry *e;
		int is_obj;

		if (sc->_nent - first >= POLICY_MCP_LIST_MAX)
			return NOT_SURE;
		if (sc->_nent == sc->_entcap) {
			size_t cap = sc->_entcap != 0 ? sc->_entcap * 2 : 64;
			struct policy_mcp_scan_entry *ne = realloc(sc->_ent, cap * sizeof(*ne));

			if (ne == NULL)
				return NOMEM;
			sc->_ent = ne;
			sc->_entcap = cap;
		}
		e = &sc->_ent[sc->_nent++];
		e->start = x->i;
		is_obj = x->i < x->n && x->s[x->i] == '{';
		x->list = list;
		x->name_ok = x->name_amb = 0;
		x->name_len = 0;
		if ((rc = value(x, is_obj ? ROLE_ENTRY : ROLE_OTHER)) != 0)
			return rc;
		/* value() of an entry leaves its reading in x (entries hold no list, so nothing overwrote it) */
		e = &sc->_ent[sc->_nent - 1];
		e->end = x->i;
		e->keep = policy_mcp_entry_kept(x->p, x->h, lists[list], is_obj, x->name_ok ? sc->_name : NULL, x->name_len,
		                                x->name_amb, sc->_vc);
	} while ((rc = more(x, ']')) == 1);
close:
	if (rc < 0)
		return rc;
	sc->_cand[list].close = x->i;
	sc->_cand[list].count = sc->_nent - first;
	leave(x);
	return 0;
}

static int
object(struct scan *x, enum role role)
{
	struct policy_mcp_scan *sc = x->sc;
	size_t base = sc->_nkeys, kused = sc->_kused;
	const char *field = role == ROLE_ENTRY ? policy_mcp_entry_field(lists[x->list]) : NULL;
	char kb[256];
	int rc;

	if ((rc = enter(x, '}')) != 0)
		goto close;
	do {
		const char *raw, *k;
		size_t dlen, rawlen;
		int esc, list = -1;
		enum role vr;

		if (x->i >= x->n || x->s[x->i] != '"')
			return NOT_SURE;
		if ((rc = string(x, kb, sizeof(kb), &dlen, &raw, &rawlen, &esc)) != 0)
			return rc;
		if (esc && dlen > sizeof(kb))
			return NOT_SURE;
		k = esc ? kb : raw;
		if ((rc = key_new(x, base, k, dlen, esc)) != 0)
			return rc;
		k = sc->_keys[sc->_nkeys - 1].p;
		ws(x);
		if (x->i >= x->n || x->s[x->i] != ':')
			return NOT_SURE;
		x->i++;
		ws(x);
		if (x->i >= x->n)
			return NOT_SURE;
		vr = member_role(x, role, k, dlen, &list);
		if (role == ROLE_ROOT) {
			if (key_is(k, dlen, "jsonrpc")) {
				const char *v;
				size_t vl, vd;
				int vesc;

				if (x->s[x->i] != '"' || string(x, NULL, 0, &vd, &v, &vl, &vesc) != 0 || vesc ||
				    !key_is(v, vl, "2.0"))
					return NOT_SURE;
				x->seen_version = 1;
			} else if (key_is(k, dlen, "id")) {
				const char *v = x->s + x->i;
				size_t vl, vd;
				int vesc, integer;

				if (*v == '"') {
					if (string(x, NULL, 0, &vd, &v, &vl, &vesc) != 0 || vesc || vl > POLICY_MCP_ID_MAX ||
					    !policy_mcp_printable(v, vl))
						return NOT_SURE;
					sc->id = v - 1;
					sc->id_len = vl + 2;
					sc->id_string = 1;
				} else {
					if (number(x, &integer) != 0 || !integer)
						return NOT_SURE;
					sc->id = v;
					sc->id_len = (size_t)(x->s + x->i - v);
					sc->id_string = 0;
				}
			} else if (key_is(k, dlen, "result")) {
				if (x->s[x->i] != '{')
					return NOT_SURE;
				if ((rc = object(x, ROLE_RESULT)) != 0)
					return rc;
				x->seen_result = 1;
			} else {
				return NOT_SURE;  /* error, method, params, or a member the reader refuses: jansson's */
			}
		} else if (list >= 0 && x->s[x->i] == '[') {
			if ((rc = list_array(x, list)) != 0)
				return rc;
		} else if (field != NULL && (key_is(k, dlen, field) || sluice_fold_eq(k, dlen, field, strlen(field)))) {
			if (!key_is(k, dlen, field)) {
				x->name_amb = 1;
				rc = value(x, ROLE_OTHER);
			} else if (x->s[x->i] == '"') {
				const char *v;
				size_t vl;
				int vesc;

				if (sc->_name == NULL && (sc->_name = malloc(POLICY_MCP_URI_MAX + 1)) == NULL)
					return NOMEM;
				rc = string(x, sc->_name, POLICY_MCP_URI_MAX + 1, &x->name_len, &v, &vl, &vesc);
				/* a longer name is cut: policy_mcp_visible refuses one over POLICY_MCP_URI_MAX all the same */
				if (x->name_len > POLICY_MCP_URI_MAX + 1)
					x->name_len = POLICY_MCP_URI_MAX + 1;
				x->name_ok = 1;
			} else {
				rc = value(x, ROLE_OTHER);
			}
			if (rc != 0)
				return rc;
		} else if ((rc = value(x, vr == ROLE_RESULT ? ROLE_OTHER : vr)) != 0) {
			return rc;
		}
	} while ((rc = more(x, '}')) == 1);
close:
	if (rc < 0)
		return rc;
	leave(x);
	sc->_nkeys = base;
	sc->_kused = kused;
	return 0;
}

static int
array(struct scan *x)
{
	int rc;

	if ((rc = enter(x, ']')) != 0)
		goto close;
	do {
		if ((rc = value(x, ROLE_OTHER)) != 0)
			return rc;
	} while ((rc = more(x, ']')) == 1);
close:
	if (rc < 0)
		return rc;
	leave(x);
	return 0;
}

/* A value at x->i (no white space before it). */
static int
value(struct scan *x, enum role role)
{
	const char *raw;
	size_t dlen, rawlen;
	int esc, integer;

	if (x->i >= x->n)
		return NOT_SURE;
	switch (x->s[x->i]) {
	case '{':
		return object(x, role);
	case '[':
		return array(x);
	case '"':
		return string(x, NULL, 0, &dlen, &raw, &rawlen, &esc);
	case 't':
		return literal(x, "true", 4);
	case 'f':
		return literal(x, "false", 5);
	case 'n':
		return literal(x, "null", 4);
	default:
		return number(x, &integer);
	}
}

int
policy_mcp_scan_read(struct policy_mcp_scan *sc, const struct policy *p, const struct policy_host *h, const char *s,
                     size_t n)
{
	struct scan x;
	int rc;

	memset(&x, 0, sizeof(x));
	x.sc = sc;
	x.p = p;
	x.h = h;
	x.s = s;
	x.n = n;
	sc->_s = s;
	sc->_n = n;
	sc->id = NULL;
	sc->id_len = 0;
	sc->outlen = 0;
	sc->list = POLICY_MCP_M_NONE;
	sc->_nent = sc->_nkeys = sc->_kused = 0;
	memset(sc->_cand, 0, sizeof(sc->_cand));
	memset(sc->_amb, 0, sizeof(sc->_amb));
	/* what one large text needed is not kept for the small ones after it */
	if (sc->_outcap > POLICY_MCP_SCAN_KEEP) {
		free(sc->out);
		sc->out = NULL;
		sc->_outcap = 0;
	}
	if (sc->_entcap * sizeof(*sc->_ent) > POLICY_MCP_SCAN_KEEP) {
		free(sc->_ent);
		sc->_ent = NULL;
		sc->_entcap = 0;
	}
	if (sc->_keys == NULL && (sc->_keys = malloc(POLICY_MCP_SCAN_KEYS * sizeof(*sc->_keys))) == NULL)
		return NOMEM;
	if (sc->_kbuf == NULL && (sc->_kbuf = malloc(POLICY_MCP_SCAN_KEYBUF)) == NULL)
		return NOMEM;
	if (sc->_vc == NULL && (sc->_vc = calloc(1, sizeof(*sc->_vc))) == NULL)
		return NOMEM;
	ws(&x);
	if (x.i >= n || s[x.i] != '{')
		return NOT_SURE;  /* a batch, or not an object: jansson's */
	if ((rc = object(&x, ROLE_ROOT)) != 0) {
		sc->_n = 0;
		return rc;
	}
	ws(&x);
	if (x.i != n || !x.seen_version || !x.seen_result || sc->id == NULL) {
		sc->_n = 0;
		return NOT_SURE;
	}
	return 1;
}

long
policy_mcp_scan_filter(struct policy_mcp_scan *sc, enum policy_mcp_method list)
{
	const struct policy_mcp_scan_entry *e;
	size_t j, k, o, need;
	int which = -1;
	long removed = 0;

	if (sc->_n == 0)
		return NOT_SURE;
	for (j = 0; j < 3; j++)
		if (list != POLICY_MCP_M_NONE ? lists[j] == list : sc->_cand[j].is_array) {
			which = (int)j;
			break;
		}
	if (which < 0)  /* a list asked for that the result lacks, or one under a name folding to a list's: refused */
		return list != POLICY_MCP_M_NONE || sc->_amb[0] || sc->_amb[1] || sc->_amb[2] ? NOT_SURE : 0;
	if (!sc->_cand[which].is_array || sc->_amb[which])
		return NOT_SURE;                                   /* refused there (policy_mcp_list_filter) */
	if (sc->_cand[which].count == 0)
		return 0;  /* an empty list (and maybe no entry array yet) */
	e = sc->_ent + sc->_cand[which].first;
	for (k = 0; k < sc->_cand[which].count; k++)
		removed += !e[k].keep;
	if (removed == 0)
		return 0;
	/* the text before the list's '[' and from its ']' on, and the kept elements between, comma-separated */
	need = sc->_cand[which].open + 1 + (sc->_n - sc->_cand[which].close);
	for (k = 0; k < sc->_cand[which].count; k++)
		need += e[k].keep ? e[k].end - e[k].start + 1 : 0;
	if (need + 1 > sc->_outcap) {
		char *b = realloc(sc->out, need + 1);

		if (b == NULL)
			return NOMEM;
		sc->out = b;
		sc->_outcap = need + 1;
	}
	o = sc->_cand[which].open + 1;
	memcpy(sc->out, sc->_s, o);
	for (k = 0, j = 0; k < sc->_cand[which].count; k++) {
		if (!e[k].keep)
			continue;
		if (j++ > 0)
			sc->out[o++] = ',';
		memcpy(sc->out + o, sc->_s + e[k].start, e[k].end - e[k].start);
		o += e[k].end - e[k].start;
	}
	memcpy(sc->out + o, sc->_s + sc->_cand[which].close, sc->_n - sc->_cand[which].close);
	o += sc->_n - sc->_cand[which].close;
	sc->out[o] = '\0';
	sc->outlen = o;
	/* the id is a member of the message, so outside the list's brackets: copied before them or after */
	k = (size_t)(sc->id - sc->_s);
	sc->id_out = k < sc->_cand[which].open ? k : k - sc->_cand[which].close + (o - (sc->_n - sc->_cand[which].close));
	sc->list = lists[which];
	return removed;
}
