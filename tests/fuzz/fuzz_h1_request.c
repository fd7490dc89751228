/*
 * tests/fuzz/fuzz_h1_request.c - h1_parse_request on arbitrary bytes.
 *
 * Checks the answer is well-formed, that results point into the input, and,
 * for small inputs, that feeding one byte more at a time gives the same
 * answer as the whole buffer.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "proxy/codec/h1_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BYTEWISE_MAX 512   /* bytewise re-parsing is quadratic */

static struct h1_message msg, msg2;

static int
inside(const char *p, size_t n, const char *buf, size_t len)
{
	return p >= buf && n <= len && p + n <= buf + len;
}

static void
check(const char *buf, size_t len, const struct h1_limits *lim)
{
	const char *err, *err2;
	int r, r2 = -2, status, status2 = 0;
	size_t i, k;

	r = h1_parse_request(buf, len, lim, &msg, &err, &status);
	if (r == -2) {
		if (len > lim->max_head_bytes)
			abort();   /* never -2 past the limit */
		return;
	}
	if (r == -1) {
		if (err == NULL || (status != 400 && status != 414 && status != 417 && status != 431 &&
		                    status != 501 && status != 505))
			abort();
	} else {
		if (r <= 0 || (size_t)r > len || (size_t)r > lim->max_head_bytes || status != 0)
			abort();
		if (!inside(msg.method, msg.method_len, buf, (size_t)r) || msg.method_len == 0 ||
		    !inside(msg.target, msg.target_len, buf, (size_t)r) || msg.target_len == 0)
			abort();
		if (msg.nheaders > lim->max_headers || msg.nheaders > H1_MAX_HEADERS)
			abort();
		for (i = 0; i < msg.nheaders; i++)
			if (!inside(msg.headers[i].name, msg.headers[i].name_len, buf, (size_t)r) ||
			    !inside(msg.headers[i].value, msg.headers[i].value_len, buf, (size_t)r) ||
			    msg.headers[i].name_len == 0)
				abort();
		if ((msg.framing == H1_BODY_LENGTH) != (msg.content_length > 0) ||
		    msg.framing == H1_BODY_UNTIL_CLOSE)
			abort();
		if (msg.minor_version == 1 && msg.host == NULL)
			abort();
		if (msg.framing == H1_BODY_CHUNKED && msg.minor_version != 1)
			abort();
	}
	if (len > BYTEWISE_MAX)
		return;
	for (k = 0; k <= len; k++) {
		r2 = h1_parse_request(buf, k, lim, &msg2, &err2, &status2);
		if (r2 != -2)
			break;
	}
	if (r2 != r || status2 != status)
		abort();
	if (r > 0 && (k != (size_t)r || msg2.nheaders != msg.nheaders || msg2.framing != msg.framing ||
	              msg2.content_length != msg.content_length || msg2.keep_alive != msg.keep_alive))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct h1_limits normal = {8192, 1024, 100};
	static const struct h1_limits small = {200, 40, 4};
	char *buf = malloc(size ? size : 1);

	if (buf == NULL)
		return 0;
	for (size_t i = 0; i < size; i++)
		buf[i] = (char)data[i];
	check(buf, size, &normal);
	check(buf, size, &small);
	free(buf);
	return 0;
}
