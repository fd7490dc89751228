/* audit/record.c - one record parsed, times, and terminal-safe strings */
#include <string.h>
#include "common/sluice.h"
#include "audit/audit.h"

/* JSON_REJECT_DUPLICATES: a line with two "host" members would show one and filter on another */
#define JSON_FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

static const char *
get_str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static int
parse_digits(const char *s, size_t n, int *out)
{
	size_t i;
	int v = 0;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int
days_in_month(int y, int m)
{
	static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return dm[m - 1];
}

/* RFC 3339 (or a bare date); returns 0 or -1. */
static int
parse_rfc3339(const char *s, int64_t *out)
{
	size_t n = strlen(s), i;
	int y, mo, d, h = 0, mi = 0, sec = 0, oh = 0, om = 0, ms = 0, scale = 100;
	int64_t off = 0;

	if (n < 10 || s[4] != '-' || s[7] != '-' || parse_digits(s, 4, &y) || parse_digits(s + 5, 2, &mo) ||
	    parse_digits(s + 8, 2, &d))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
		return -1;
	if (n > 10) {
		if ((s[10] != 'T' && s[10] != 't' && s[10] != ' ') || n < 20 || s[13] != ':' || s[16] != ':' ||
		    parse_digits(s + 11, 2, &h) || parse_digits(s + 14, 2, &mi) || parse_digits(s + 17, 2, &sec))
			return -1;
		if (h > 23 || mi > 59 || sec > 60)
			return -1;
		if (sec == 60)
			sec = 59;  /* a leap second sorts with the one before */
		i = 19;
		if (s[i] == '.') {
			for (i++; s[i] >= '0' && s[i] <= '9'; i++) {
				ms += (s[i] - '0') * scale;
				scale /= 10;
				if (i > 40)
					return -1;
			}
			if (s[i - 1] == '.')
				return -1;
		}
		if ((s[i] == 'Z' || s[i] == 'z') && s[i + 1] == '\0') {
			off = 0;
		} else if ((s[i] == '+' || s[i] == '-') && n - i == 6 && s[i + 3] == ':' &&
		           !parse_digits(s + i + 1, 2, &oh) && !parse_digits(s + i + 4, 2, &om) && oh <= 23 && om <= 59) {
			off = (int64_t)(oh * 60 + om) * 60000;
			if (s[i] == '+')
				off = -off;
		} else {
			return -1;
		}
	}
	*out = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec) * 1000) + ms + off;
	return 0;
}

int
audit_time_parse(const char *s, int64_t now_ms, int64_t *out_ms)
{
	size_t n = strlen(s), i;
	int64_t v = 0, unit;

	if (n >= 2 && n <= 11) {
		for (i = 0; i < n - 1 && s[i] >= '0' && s[i] <= '9'; i++)
			v = v * 10 + (s[i] - '0');
		if (i == n - 1 && i > 0) {
			switch (s[i]) {
			case 's': unit = 1000; break;
			case 'm': unit = 60 * 1000; break;
			case 'h': unit = 3600 * 1000; break;
			case 'd': unit = 86400 * 1000; break;
			case 'w': unit = 7 * 86400 * 1000LL; break;
			default: return SLUICE_EINVAL;
			}
			*out_ms = now_ms - v * unit;  /* v < 10^10, unit < 10^9: no overflow */
			return 0;
		}
	}
	if (parse_rfc3339(s, out_ms) != 0)
		return SLUICE_EINVAL;
	return 0;
}

int
audit_record_parse(struct audit_record *rec, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *o, *v;
	int64_t t;

	memset(rec, 0, sizeof(*rec));
	rec->seq = -1;
	rec->status = -1;
	rec->time_ms = INT64_MIN;
	o = json_loadb(line, len, JSON_FLAGS, &jerr);
	if (o == NULL)
		return SLUICE_EPARSE;
	if (!json_is_object(o)) {
		json_decref(o);
		return SLUICE_EPARSE;
	}
	rec->obj = o;
	v = json_object_get(o, AUDIT_FIELD_SEQ);
	if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= AUDIT_SEQ_MAX)
		rec->seq = json_integer_value(v);
	v = json_object_get(o, "status");
	if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 999)
		rec->status = json_integer_value(v);
	rec->time = get_str(o, AUDIT_FIELD_TIME);
	if (rec->time != NULL && parse_rfc3339(rec->time, &t) == 0)
		rec->time_ms = t;
	rec->type = get_str(o, AUDIT_FIELD_TYPE);
	rec->kind = audit_kind_parse(rec->type);
	rec->sandbox = get_str(o, "sandbox");
	rec->host = get_str(o, "host");
	rec->sni = get_str(o, "sni");
	rec->verdict = get_str(o, AUDIT_FIELD_VERDICT);
	rec->verdict_kind = audit_verdict_parse(rec->verdict);
	rec->id = get_str(o, "id");
	rec->method = get_str(o, "method");
	rec->path = get_str(o, "path");
	return 0;
}

void
audit_record_dispose(struct audit_record *rec)
{
	json_decref(rec->obj);
	rec->obj = NULL;
}

/* Decodes one UTF-8 code point at <s>/<n>; returns its length and *<cp>, or 0 when invalid. */
static size_t
utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c;
	size_t len, i;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		c = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* The display form of the next piece of <s>; returns the input bytes it used. */
static size_t
piece(const unsigned char *s, size_t n, char *out, size_t *outlen)
{
	uint32_t cp;
	size_t k = utf8_decode(s, n, &cp);
	int w;

	if (k == 0) {
		w = snprintf(out, 16, "\\x%02x", s[0]);
		k = 1;
	} else if (cp == '\\') {
		w = snprintf(out, 16, "\\\\");
	} else if (cp >= 0x20 && cp < 0x7f) {
		out[0] = (char)cp;
		w = 1;
	} else if (cp <= 0xff) {
		w = snprintf(out, 16, "\\x%02x", (unsigned)cp);
	} else {
		w = snprintf(out, 16, "\\u{%x}", (unsigned)cp);
	}
	*outlen = (size_t)w;
	return k;
}

size_t
audit_term_escape(char *out, size_t cap, const char *s, size_t n, size_t width)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i, k, pl, total = 0, cols = 0, used = strnlen(out, cap);
	char p[16];
	int cut = 0;

	if (cap == 0)
		return 0;
	if (used >= cap)
		used = cap - 1;
	/* one counting pass: does it all fit in <width>? */
	for (i = 0; i < n; i += k) {
		k = piece(u + i, n - i, p, &pl);
		total += pl;
		if (total > width) {
			cut = 1;
			break;
		}
	}
	for (i = 0; i < n; i += k) {
		k = piece(u + i, n - i, p, &pl);
		if (cut && cols + pl + 3 > width)
			break;
		if (used + pl + 1 > cap)
			break;
		memcpy(out + used, p, pl);
		used += pl;
		cols += pl;
	}
	if (cut && width >= 3 && used + 4 <= cap) {
		memcpy(out + used, SLUICE_LIT("..."));
		used += 3;
		cols += 3;
	}
	out[used] = '\0';
	return cols;
}
