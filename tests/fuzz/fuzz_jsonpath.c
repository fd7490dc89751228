/*
 * tests/fuzz/fuzz_jsonpath.c - JSON paths and the form reader (policy/jsonpath.c).
 * Paths: a valid path without wildcards matches itself; a key of any bytes
 * appended to "$" either fails (a control byte, too long) or gives a valid
 * path that matches itself and "$.*" and whose key reads back identically
 * through ['..'] quoting.  Forms: fields tile the body, decoding never grows.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
paths(const char *s, size_t len)
{
	char buf[1100];
	size_t n = 1;

	if (policy_json_path_ok(s, len) && memchr(s, '\0', len) == NULL && memchr(s, '*', len) == NULL &&
	    !policy_json_path_match(s, s))
		__builtin_trap();
	if (memchr(s, '\0', len) == NULL)
		(void)policy_json_path_match(s, s);
	buf[0] = '$';
	buf[1] = '\0';
	if (policy_json_path_key(buf, sizeof(buf), &n, s, len) != 0)
		return;
	if (strlen(buf) != n || !policy_json_path_match("$.*", buf) || !policy_json_path_match(buf, buf))
		__builtin_trap();
	if (n <= POLICY_JSON_PATH_MAX && !policy_json_path_ok(buf, n))
		__builtin_trap();
	if (policy_json_path_index(buf, sizeof(buf), &n, 7) == 0 && !policy_json_path_match("$.*[*]", buf))
		__builtin_trap();
}

static void
form(const char *s, size_t len)
{
	struct policy_form_iter it = {s, s + len};
	const char *name, *val, *prev = s;
	size_t nl, vl;
	char *out = malloc(len + 1);
	long d;

	if (out == NULL)
		abort();
	while (policy_form_next(&it, &name, &nl, &val, &vl)) {
		if (name < prev || name + nl > s + len || val < name + nl || val + vl > s + len)
			__builtin_trap();
		prev = val + vl;
		d = policy_form_decode(name, nl, out, len);
		if (d > (long)nl)
			__builtin_trap();
		d = policy_form_decode(val, vl, out, len);
		if (d > (long)vl)
			__builtin_trap();
	}
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	paths(s, size);
	form(s, size);
	free(s);
	return 0;
}
