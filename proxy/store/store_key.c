/*
 * proxy/store/store_key.c - the keys of shared counters (the escaping rule
 * is in store.h): pure, no I/O.
 */
#include <string.h>

#include "store_int.h"

static int
plain(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
	       c == '-';
}

long
store_key_escape(char *out, size_t cap, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (plain(c)) {
			if (o + 1 >= cap)
				return -1;
			out[o++] = (char)c;
		} else {
			if (o + 3 >= cap)
				return -1;
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (o >= cap)
		return -1;
	out[o] = '\0';
	return (long)o;
}

/* Appends <n> bytes of <s> at *<o> in <out> (<cap>, room for a NUL kept): 0, or -1 when they do not fit. */
static int
put(char *out, size_t cap, size_t *o, const char *s, size_t n)
{
	if (n >= cap - *o)
		return -1;
	memcpy(out + *o, s, n);
	*o += n;
	out[*o] = '\0';
	return 0;
}

#define PUT_LIT(out, cap, o, lit) put((out), (cap), (o), (lit), sizeof(lit) - 1)

long
store_key(char *out, size_t cap, const char *prefix, enum store_kind kind, const char *policy_key, int global,
          const char *sandbox)
{
	size_t o = 0, plen = prefix != NULL ? strlen(prefix) : 0, klen;
	long n;

	if (out == NULL || cap == 0 || policy_key == NULL)
		return -1;
	klen = strlen(policy_key);
	if (plen > STORE_PREFIX_MAX || klen == 0 || klen > STORE_NAME_MAX ||
	    (!global && sandbox != NULL && strlen(sandbox) > STORE_NAME_MAX))
		return -1;
	out[0] = '\0';
	if (put(out, cap, &o, prefix != NULL ? prefix : "", plen) != 0)
		return -1;
	if (kind == STORE_KIND_RATE) {
		if (PUT_LIT(out, cap, &o, "r:") != 0)
			return -1;
	} else if (kind == STORE_KIND_BUDGET) {
		if (PUT_LIT(out, cap, &o, "b:") != 0)
			return -1;
	} else {
		return -1;
	}
	if ((n = store_key_escape(out + o, cap - o, policy_key, klen)) < 0)
		return -1;
	o += (size_t)n;
	if (PUT_LIT(out, cap, &o, ":") != 0)
		return -1;
	if (global) {
		if (PUT_LIT(out, cap, &o, "*") != 0)
			return -1;
	} else if (sandbox == NULL) {
		if (PUT_LIT(out, cap, &o, "?") != 0)
			return -1;
	} else {
		if ((n = store_key_escape(out + o, cap - o, sandbox, strlen(sandbox))) < 0)
			return -1;
		o += (size_t)n;
	}
	return (long)o;
}
