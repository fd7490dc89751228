/*
 * secrets/scrub_forms.c - the echo forms of a secret's value: what an
 * upstream may return it as (base64 at each alignment, the percent-encodings
 * common encoders write, JSON escapes), each mapped to the same form of the
 * placeholder.  The pairs go into the set through scrub_int.h; a batch of
 * secrets is indexed once.
 */
#include <stdlib.h>
#include <string.h>

#include "common/b64.h"
#include "common/json.h"
#include "common/pct.h"
#include "common/sluice.h"
#include "secrets/scrub.h"
#include "scrub_int.h"

/*
 * The base64 characters of <v>/<n> placed at offset <align> (0..2) of an
 * encoded stream: those that depend on its bytes only, or with <terminal>
 * everything from the first of them to the end of a stream that ends with
 * <v> (its partial last character and padding).  <tmp> has room for
 * n + 2 bytes and <out> for 4 * ceil((n + 2) / 3).  Returns the length.
 */
static size_t
b64_form(const uint8_t *v, size_t n, unsigned align, int terminal, uint8_t *tmp, uint8_t *out)
{
	size_t first = (4 * align + 2) / 3;  /* ceil(4a / 3): the first character without a byte before <v> */
	size_t last = 4 * (align + n) / 3;   /* one past the last character without a byte after <v> */
	size_t total;

	memset(tmp, 0, align);
	memcpy(tmp + align, v, n);
	total = b64_encode((char *)out, tmp, align + n);
	if (terminal)
		last = total;
	if (last <= first)
		return 0;
	memmove(out, out + first, last - first);
	return last - first;
}

/*
 * How each common encoder percent-encodes: which bytes besides ALPHA and
 * DIGIT it keeps, and whether it writes a space as '+'.
 */
enum pct_style {
	PCT_RFC3986 = 0,   /* every byte outside unreserved (-._~): curl, Java's URI, Rust's urlencoding */
	PCT_URI_COMPONENT, /* JavaScript encodeURIComponent: also keeps !'()* */
	PCT_PATH,          /* Python's urllib.parse.quote: also keeps '/' (its default safe=) */
	PCT_PLUS,          /* Python quote_plus, Go url.QueryEscape: unreserved kept, space as '+' */
	PCT_WHATWG,        /* HTML forms, URLSearchParams: *-._ kept, space as '+', '~' encoded */
	PCT_PHP,           /* PHP urlencode: -._ kept, space as '+' */
	PCT_STYLES
};

static int
pct_keeps(uint8_t c, int style)
{
	static const char *const keep[PCT_STYLES] = {"-._~", "-._~!'()*", "-._~/", "-._~", "*-._", "-._"};

	if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
		return 1;
	return c != 0 && strchr(keep[style], c) != NULL;
}

static int keep_rfc3986(unsigned char c) { return pct_keeps(c, PCT_RFC3986); }
static int keep_uri_component(unsigned char c) { return pct_keeps(c, PCT_URI_COMPONENT); }
static int keep_path(unsigned char c) { return pct_keeps(c, PCT_PATH); }
static int keep_plus(unsigned char c) { return pct_keeps(c, PCT_PLUS); }
static int keep_whatwg(unsigned char c) { return pct_keeps(c, PCT_WHATWG); }
static int keep_php(unsigned char c) { return pct_keeps(c, PCT_PHP); }

/* Percent-encoding of <v>/<n> in <style> into <out> (room for 3n). */
static size_t
pct_form(const uint8_t *v, size_t n, int style, int lower, uint8_t *out)
{
	static pct_keep_fn *const keep[PCT_STYLES] = {keep_rfc3986, keep_uri_component, keep_path,
	                                              keep_plus,    keep_whatwg,        keep_php};
	int plus = style == PCT_PLUS || style == PCT_WHATWG || style == PCT_PHP;

	return pct_encode((char *)out, v, n, keep[style], (lower ? PCT_LOWER : PCT_UPPER) | (plus ? PCT_SPACE_PLUS : 0));
}

enum { JSON_PLAIN = 0, JSON_SLASH = 1, JSON_HTML = 2 };

/*
 * JSON string escaping of <v>/<n> into <out> (room for 6n): the short escapes
 * and \u00xx for other control bytes; JSON_SLASH also writes '/' as "\/"
 * (PHP), JSON_HTML writes < > & as \u003c \u003e \u0026 (Go).
 */
static size_t
json_form(const uint8_t *v, size_t n, int variant, uint8_t *out)
{
	unsigned flags = JSON_ESC_SHORT | (variant == JSON_SLASH ? JSON_ESC_SLASH : 0) |
	                 (variant == JSON_HTML ? JSON_ESC_HTML : 0);

	return json_escape((char *)out, JSON_ESCAPED_MAX(n), v, n, flags);
}

/*
 * Adds one form of a secret unless it is shorter than 8 bytes (too likely to
 * occur by chance) or the secret already has it (pairs from <first> on).
 */
static int
form_add(struct scrub_set *s, size_t first, const uint8_t *from, size_t from_len, const uint8_t *to,
         size_t to_len, unsigned tag)
{
	size_t i;

	if (from_len < SCRUB_FORM_MIN)
		return 0;
	if (!scrub_pair_ok(from, from_len, to, to_len, tag))
		return SLUICE_EINVAL;
	for (i = first; i < s->n; i++)
		if (s->pairs[i].from_len == from_len && memcmp(s->pairs[i].from, from, from_len) == 0)
			return 0;
	scrub_pair_push(s, from, from_len, to, to_len, tag);
	return 0;
}

static int
has_byte(const uint8_t *v, size_t n, const char *set)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] != 0 && strchr(set, v[i]) != NULL)
			return 1;
	return 0;
}

/*
 * Pushes every echo form of <value> (scrub_set_add_secret) without
 * reindexing; <tmp>, <fb>, <tb> are scratch of big, 6 * big, 6 * big bytes,
 * big = max(vlen, plen) + 8.  On an error the caller drops the pairs pushed.
 */
static int
secret_forms(struct scrub_set *s, const uint8_t *value, size_t vlen, const uint8_t *ph, size_t plen, unsigned tag,
             uint8_t *tmp, uint8_t *fb, uint8_t *tb)
{
	size_t first = s->n, fl, tl;
	unsigned a;
	int ret, lower, style, variant;

	if ((ret = form_add(s, first, value, vlen, ph, plen, tag)) != 0)
		return ret;
	for (a = 0; a < 3; a++) {
		fl = b64_form(value, vlen, a, 0, tmp, fb);
		tl = b64_form(ph, plen, a, 0, tmp, tb);
		if ((ret = form_add(s, first, fb, fl, tb, tl, tag)) != 0)
			return ret;
		if ((a + vlen) % 3 == 0)
			continue;  /* the stream's end falls on a character boundary: no partial form */
		fl = b64_form(value, vlen, a, 1, tmp, fb);
		tl = b64_form(ph, plen, a, 1, tmp, tb);
		if ((ret = form_add(s, first, fb, fl, tb, tl, tag)) != 0)
			return ret;
	}
	for (style = 0; style < PCT_STYLES; style++) {
		for (lower = 0; lower < 2; lower++) {
			fl = pct_form(value, vlen, style, lower, fb);
			tl = pct_form(ph, plen, style, lower, tb);
			if (fl == vlen && memcmp(fb, value, vlen) == 0)
				break;  /* nothing to encode: the literal already covers it */
			if ((ret = form_add(s, first, fb, fl, tb, tl, tag)) != 0)
				return ret;
		}
	}
	for (variant = JSON_PLAIN; variant <= JSON_HTML; variant++) {
		if (variant == JSON_SLASH && !has_byte(value, vlen, "/"))
			continue;
		if (variant == JSON_HTML && !has_byte(value, vlen, "<>&"))
			continue;
		fl = json_form(value, vlen, variant, fb);
		tl = json_form(ph, plen, variant, tb);
		if (fl == vlen && memcmp(fb, value, vlen) == 0)
			continue;
		if ((ret = form_add(s, first, fb, fl, tb, tl, tag)) != 0)
			return ret;
	}
	return 0;
}

static int
secret_ok(const struct scrub_secret *v)
{
	size_t plen;

	if (v->value == NULL || v->len == 0 || v->len > SCRUB_NEEDLE_MAX || v->placeholder == NULL ||
	    v->tag >= SCRUB_TAGS)
		return 0;
	plen = strlen(v->placeholder);
	return plen > 0 && plen <= SCRUB_NEEDLE_MAX;
}

int
scrub_set_add_secrets(struct scrub_set *s, const struct scrub_secret *v, size_t n)
{
	size_t i, big = 0, first = s->n, plen;
	uint8_t *tmp, *fb, *tb;
	int ret = 0;

	for (i = 0; i < n; i++) {
		if (!secret_ok(&v[i]))
			return SLUICE_EINVAL;
		plen = strlen(v[i].placeholder);
		if ((v[i].len > plen ? v[i].len : plen) + 8 > big)
			big = (v[i].len > plen ? v[i].len : plen) + 8;
	}
	if (n == 0)
		return 0;
	tmp = xmalloc(big);
	fb = xmalloc(6 * big);
	tb = xmalloc(6 * big);
	for (i = 0; i < n && ret == 0; i++)
		ret = secret_forms(s, v[i].value, v[i].len, (const uint8_t *)v[i].placeholder, strlen(v[i].placeholder),
		                   v[i].tag, tmp, fb, tb);
	if (ret != 0)
		while (s->n > first)
			scrub_pair_wipe(&s->pairs[--s->n]);
	scrub_reindex(s);
	sluice_wipe(tmp, big);
	sluice_wipe(fb, 6 * big);
	sluice_wipe(tb, 6 * big);
	free(tmp);
	free(fb);
	free(tb);
	return ret;
}

int
scrub_set_add_secret(struct scrub_set *s, const uint8_t *value, size_t vlen, const char *placeholder,
                     unsigned tag)
{
	struct scrub_secret v = {value, vlen, placeholder, tag};

	return scrub_set_add_secrets(s, &v, 1);
}

int
scrub_set_add_basic(struct scrub_set *s, const uint8_t *cred, size_t len, const uint8_t *cred_ph, size_t ph_len,
                    unsigned tag)
{
	uint8_t *fb, *tb;
	size_t fl, tl;
	int ret;

	if (cred == NULL || len == 0 || cred_ph == NULL || ph_len == 0 || len > SCRUB_NEEDLE_MAX / 2 ||
	    ph_len > SCRUB_NEEDLE_MAX / 2)
		return SLUICE_EINVAL;
	fb = xmalloc(4 * (len / 3 + 1));
	tb = xmalloc(4 * (ph_len / 3 + 1));
	fl = b64_encode((char *)fb, cred, len);
	tl = b64_encode((char *)tb, cred_ph, ph_len);
	ret = scrub_set_add(s, fb, fl, tb, tl, tag);
	sluice_wipe(fb, fl);
	sluice_wipe(tb, tl);
	free(fb);
	free(tb);
	return ret;
}

int
scrub_set_add_search(struct scrub_set *s, const char *ph, size_t len, unsigned tag)
{
	const uint8_t *p = (const uint8_t *)ph;
	size_t first = s->n, fl, k;
	uint8_t *tmp, *fb;
	unsigned a;
	int ret;

	if (len == 0 || len > SCRUB_NEEDLE_MAX / 2 || tag >= SCRUB_TAGS)
		return SLUICE_EINVAL;
	tmp = xmalloc(len + 8);
	fb = xmalloc(2 * len + 16);
	/* the placeholder itself whatever its length (only its encoded forms have the SCRUB_FORM_MIN floor) */
	ret = SLUICE_EINVAL;
	if (scrub_pair_ok(p, len, p, len, tag)) {
		scrub_pair_push(s, p, len, p, len, tag);
		ret = 0;
	}
	for (a = 0; a < 3 && ret == 0; a++) {
		fl = b64_form(p, len, a, 0, tmp, fb);
		if ((ret = form_add(s, first, fb, fl, fb, fl, tag)) != 0)
			break;
		/* the same characters in the URL alphabet (form_add skips it when nothing changes) */
		for (k = 0; k < fl; k++)
			fb[k] = fb[k] == '+' ? '-' : fb[k] == '/' ? '_' : fb[k];
		ret = form_add(s, first, fb, fl, fb, fl, tag);
	}
	if (ret != 0)
		while (s->n > first)
			scrub_pair_wipe(&s->pairs[--s->n]);
	scrub_reindex(s);
	free(tmp);
	free(fb);
	return ret;
}
