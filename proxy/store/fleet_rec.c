/*
 * proxy/store/fleet_rec.c - the sealed records of fleet approvals
 * (fleet.h): "<hex HMAC-SHA-256>.<JSON payload>", written with common/json.h
 * in a fixed order, read back with jansson strictly (every member known,
 * none twice, each of its type and bounds).  Pure: no I/O, no globals.
 */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/hex.h"
#include "common/json.h"
#include "common/sluice.h"
#include "proxy/store/fleet.h"

#define MAC_HEX 64

static int
mac_of(const uint8_t *key, size_t keylen, const char *p, size_t n, uint8_t md[32])
{
	unsigned mdlen = 0;

	if (key == NULL || keylen == 0 ||
	    HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)p, n, md, &mdlen) == NULL || mdlen != 32)
		return -1;
	return 0;
}

/* <payload> (<n> bytes at out + MAC_HEX + 1) gets its MAC in front. */
static long
seal(const uint8_t *key, size_t keylen, char *out, size_t cap, long n)
{
	uint8_t md[32];
	char hex[MAC_HEX + 1];

	if (n < 0)
		return FLEET_ETOOBIG;
	if (mac_of(key, keylen, out + MAC_HEX + 1, (size_t)n, md) != 0)
		return FLEET_EINVAL;
	hex_encode(hex, md, sizeof(md));
	memcpy(out, hex, MAC_HEX);
	out[MAC_HEX] = '.';
	if ((size_t)n + MAC_HEX + 1 >= cap)
		return FLEET_ETOOBIG;
	out[MAC_HEX + 1 + n] = '\0';
	OPENSSL_cleanse(md, sizeof(md));
	return (long)n + MAC_HEX + 1;
}

static int
id_ok(const char *s)
{
	size_t i;

	for (i = 0; i < FLEET_ID_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[FLEET_ID_LEN] == '\0';
}

static int
gw_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > FLEET_GW_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

static int
printable(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return 0;
	return 1;
}

static int
sha_ok(const char *s)
{
	size_t i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[64] == '\0';
}

long
fleet_hold_seal(const struct fleet_hold *h, const uint8_t *key, size_t keylen, char *out, size_t cap)
{
	struct jbuf jb;
	size_t i, off = MAC_HEX + 1;
	long n;

	if (cap > FLEET_REC_MAX + 1)
		cap = FLEET_REC_MAX + 1;
	if (h == NULL || out == NULL || cap <= off + 2 || !id_ok(h->id) || !gw_ok(h->gw, strlen(h->gw)) ||
	    h->method == NULL || h->host == NULL || h->path == NULL || !sha_ok(h->body_sha256) ||
	    h->nfields > POLICY_FIELDS_MAX || (h->nfields > 0 && h->fields == NULL) || h->created_ms < 0 ||
	    h->expiry_ms < 0)
		return FLEET_EINVAL;
	jb_init(&jb, out + off, cap - off);
	jb_int(&jb, "v", 1);
	jb_str(&jb, "t", "hold");
	jb_str(&jb, "id", h->id);
	jb_str(&jb, "gw", h->gw);
	jb_str(&jb, "sandbox", h->sandbox);
	jb_str(&jb, "method", h->method);
	jb_str(&jb, "host", h->host);
	jb_str(&jb, "path", h->path);
	jb_str(&jb, "rule", h->rule);
	jb_str(&jb, "body_sha256", h->body_sha256);
	jb_int(&jb, "created_ms", h->created_ms);
	jb_int(&jb, "expiry_ms", h->expiry_ms);
	{
		const char *places[POLICY_FIELDS_MAX], *values[POLICY_FIELDS_MAX];

		for (i = 0; i < h->nfields; i++) {
			places[i] = h->fields[i].place != NULL ? h->fields[i].place : "?";
			values[i] = h->fields[i].value != NULL ? h->fields[i].value : "";
		}
		if (h->nfields > 0)
			jb_pairs(&jb, "fields", "place", places, "value", values, h->nfields);
		else
			jb_empty_array(&jb, "fields");
	}
	n = jb_finish(&jb, 0);
	return seal(key, keylen, out, cap, n);
}

long
fleet_decision_seal(const struct fleet_decision *d, const uint8_t *key, size_t keylen, char *out, size_t cap)
{
	struct jbuf jb;
	size_t off = MAC_HEX + 1;

	if (cap > FLEET_REC_MAX + 1)
		cap = FLEET_REC_MAX + 1;
	if (d == NULL || out == NULL || cap <= off + 2 || !id_ok(d->id) || !gw_ok(d->gw, strlen(d->gw)) ||
	    !gw_ok(d->from, strlen(d->from)) || (d->approve != 0 && d->approve != 1) ||
	    strnlen(d->by, sizeof(d->by)) == 0 || strnlen(d->by, sizeof(d->by)) == sizeof(d->by) ||
	    !printable(d->by, strlen(d->by)) || d->time_ms < 0)
		return FLEET_EINVAL;
	jb_init(&jb, out + off, cap - off);
	jb_int(&jb, "v", 1);
	jb_str(&jb, "t", "decision");
	jb_str(&jb, "id", d->id);
	jb_str(&jb, "gw", d->gw);
	jb_str(&jb, "decision", d->approve ? "approve" : "reject");
	jb_str(&jb, "by", d->by);
	jb_str(&jb, "from", d->from);
	jb_int(&jb, "time_ms", d->time_ms);
	return seal(key, keylen, out, cap, jb_finish(&jb, 0));
}

/* The framing and the MAC: the payload's JSON (a new reference), or NULL with *<ret>. */
static json_t *
open_payload(const char *rec, size_t len, const uint8_t *key, size_t keylen, const char *type, int *ret)
{
	uint8_t md[32], want[32];
	json_t *o, *v, *t;
	size_t i;

	*ret = FLEET_EPARSE;
	if (rec == NULL || len <= MAC_HEX + 1 || len > FLEET_REC_MAX || rec[MAC_HEX] != '.')
		return NULL;
	for (i = 0; i < MAC_HEX; i += 2) {
		int hi = sluice_hexval((unsigned char)rec[i]), lo = sluice_hexval((unsigned char)rec[i + 1]);

		if (hi < 0 || lo < 0 || (rec[i] >= 'A' && rec[i] <= 'F') || (rec[i + 1] >= 'A' && rec[i + 1] <= 'F'))
			return NULL;
		want[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	if (mac_of(key, keylen, rec + MAC_HEX + 1, len - MAC_HEX - 1, md) != 0)
		return NULL;
	if (CRYPTO_memcmp(md, want, sizeof(md)) != 0) {
		*ret = FLEET_EFORGED;
		return NULL;
	}
	o = json_loadb(rec + MAC_HEX + 1, len - MAC_HEX - 1, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(o))
		goto bad;
	v = json_object_get(o, "v");
	t = json_object_get(o, "t");
	if (!json_is_integer(v) || json_integer_value(v) != 1 || !json_is_string(t) || strcmp(json_string_value(t), type) != 0)
		goto bad;
	*ret = FLEET_OK;
	return o;
bad:
	json_decref(o);
	return NULL;
}

/*
 * The string <v> back to the bytes the writer was given: common/json.h
 * writes each byte >= 0x80 as \u00XX, so each code point up to U+00FF is one
 * byte (jansson hands it over as UTF-8, two bytes).  A code point above
 * U+00FF was not written by a gateway: 0, and the record is refused.
 */
static int
to_bytes(json_t *v)
{
	const unsigned char *s = (const unsigned char *)json_string_value(v);
	size_t i, o, n = json_string_length(v);
	char *b;
	int ok = 1;

	for (i = 0; i < n && s[i] < 0x80; i++)
		;
	if (i == n)
		return 1;
	b = xmalloc(n);
	for (i = 0, o = 0; i < n && ok; o++) {
		if (s[i] < 0x80)
			b[o] = (char)s[i++];
		else if ((s[i] == 0xc2 || s[i] == 0xc3) && i + 1 < n && (s[i + 1] & 0xc0) == 0x80) {
			b[o] = (char)((s[i] & 0x03) << 6 | (s[i + 1] & 0x3f));
			i += 2;
		} else
			ok = 0;
	}
	ok = ok && json_string_setn_nocheck(v, b, o) == 0;
	free(b);
	return ok;
}

/* Member <k> of <o>: a string without NUL of at most <max> bytes (0: any), or NULL (*<bad> set unless <opt>). */
static const char *
str_of(json_t *o, const char *k, size_t max, int opt, int *bad)
{
	json_t *v = json_object_get(o, k);
	const char *s;

	if (v == NULL && opt)
		return NULL;
	if (!json_is_string(v) || !to_bytes(v)) {
		*bad = 1;
		return NULL;
	}
	s = json_string_value(v);
	if (strlen(s) != json_string_length(v) || (max != 0 && json_string_length(v) > max)) {
		*bad = 1;
		return NULL;
	}
	return s;
}

static int64_t
ms_of(json_t *o, const char *k, int *bad)
{
	json_t *v = json_object_get(o, k);

	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		*bad = 1;
		return 0;
	}
	return (int64_t)json_integer_value(v);
}

/* Every member of <o> is one of <known> (<n>). */
static int
only_members(json_t *o, const char *const *known, size_t n)
{
	const char *k;
	json_t *v;
	size_t i;

	json_object_foreach(o, k, v) {
		for (i = 0; i < n && strcmp(k, known[i]) != 0; i++)
			;
		if (i == n)
			return 0;
	}
	return 1;
}

int
fleet_hold_open(const char *rec, size_t len, const uint8_t *key, size_t keylen, struct fleet_hold *h)
{
	static const char *const known[] = {"v", "t", "id", "gw", "sandbox", "method", "host", "path", "rule",
	                                    "body_sha256", "created_ms", "expiry_ms", "fields"};
	const char *id, *gw, *sha;
	json_t *o, *fields, *f;
	int ret, bad = 0;
	size_t i;

	memset(h, 0, sizeof(*h));
	if ((o = open_payload(rec, len, key, keylen, "hold", &ret)) == NULL)
		return ret;
	id = str_of(o, "id", FLEET_ID_LEN, 0, &bad);
	gw = str_of(o, "gw", FLEET_GW_MAX, 0, &bad);
	sha = str_of(o, "body_sha256", 64, 0, &bad);
	h->sandbox = str_of(o, "sandbox", 0, 1, &bad);
	h->rule = str_of(o, "rule", 0, 1, &bad);
	h->method = str_of(o, "method", 0, 0, &bad);
	h->host = str_of(o, "host", 0, 0, &bad);
	h->path = str_of(o, "path", 0, 0, &bad);
	h->created_ms = ms_of(o, "created_ms", &bad);
	h->expiry_ms = ms_of(o, "expiry_ms", &bad);
	fields = json_object_get(o, "fields");
	if (bad || !only_members(o, known, sizeof(known) / sizeof(known[0])) || !id_ok(id) || !gw_ok(gw, strlen(gw)) ||
	    !sha_ok(sha) || !json_is_array(fields) || json_array_size(fields) > POLICY_FIELDS_MAX)
		goto bad;
	if (json_array_size(fields) > 0)
		h->_fields = xcalloc(json_array_size(fields), sizeof(*h->_fields));
	json_array_foreach(fields, i, f) {
		static const char *const fknown[] = {"place", "value"};

		if (!json_is_object(f) || !only_members(f, fknown, 2))
			goto bad;
		h->_fields[i].place = str_of(f, "place", 0, 0, &bad);
		h->_fields[i].value = str_of(f, "value", 0, 0, &bad);
		if (bad)
			goto bad;
	}
	memcpy(h->id, id, FLEET_ID_LEN + 1);
	memcpy(h->gw, gw, strlen(gw) + 1);
	memcpy(h->body_sha256, sha, 65);
	h->fields = h->_fields;
	h->nfields = json_array_size(fields);
	h->_json = o;
	return FLEET_OK;
bad:
	json_decref(o);
	free(h->_fields);
	memset(h, 0, sizeof(*h));
	return FLEET_EPARSE;
}

void
fleet_hold_dispose(struct fleet_hold *h)
{
	if (h == NULL)
		return;
	json_decref(h->_json);
	free(h->_fields);
	memset(h, 0, sizeof(*h));
}

int
fleet_decision_open(const char *rec, size_t len, const uint8_t *key, size_t keylen, struct fleet_decision *d)
{
	static const char *const known[] = {"v", "t", "id", "gw", "decision", "by", "from", "time_ms"};
	const char *id, *gw, *dec, *by, *from;
	json_t *o;
	int ret, bad = 0;

	memset(d, 0, sizeof(*d));
	if ((o = open_payload(rec, len, key, keylen, "decision", &ret)) == NULL)
		return ret;
	id = str_of(o, "id", FLEET_ID_LEN, 0, &bad);
	gw = str_of(o, "gw", FLEET_GW_MAX, 0, &bad);
	dec = str_of(o, "decision", 0, 0, &bad);
	by = str_of(o, "by", sizeof(d->by) - 1, 0, &bad);
	from = str_of(o, "from", FLEET_GW_MAX, 0, &bad);
	d->time_ms = ms_of(o, "time_ms", &bad);
	if (bad || !only_members(o, known, sizeof(known) / sizeof(known[0])) || !id_ok(id) || !gw_ok(gw, strlen(gw)) ||
	    !gw_ok(from, strlen(from)) || by[0] == '\0' || !printable(by, strlen(by)) ||
	    (strcmp(dec, "approve") != 0 && strcmp(dec, "reject") != 0))
		goto bad;
	memcpy(d->id, id, FLEET_ID_LEN + 1);
	memcpy(d->gw, gw, strlen(gw) + 1);
	memcpy(d->by, by, strlen(by) + 1);
	memcpy(d->from, from, strlen(from) + 1);
	d->approve = strcmp(dec, "approve") == 0;
	json_decref(o);
	return FLEET_OK;
bad:
	json_decref(o);
	memset(d, 0, sizeof(*d));
	return FLEET_EPARSE;
}
