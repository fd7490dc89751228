/*
 * tests/fuzz/fuzz_h1_response.c - h1_parse_response on arbitrary bytes.
 *
 * The first byte picks the request method; the rest is the response head.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/codec/h1_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BYTEWISE_MAX 512

static struct h1_message msg, msg2;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = {"GET", "HEAD", "CONNECT", "POST", NULL};
	static const struct h1_limits lim = {4096, 512, 64};
	const char *method, *err, *err2;
	char *buf;
	size_t len, i, k;
	int r, r2 = -2;

	if (size < 1)
		return 0;
	method = methods[data[0] % 5];
	len = size - 1;
	buf = malloc(len ? len : 1);
	if (buf == NULL)
		return 0;
	memcpy(buf, data + 1, len);
	r = h1_parse_response(buf, len, &lim, method, method ? strlen(method) : 0, &msg, &err);
	if (r == -2 && len > lim.max_head_bytes)
		abort();
	if (r == -1 && err == NULL)
		abort();
	if (r == 0 || r < -2 || (r > 0 && (size_t)r > len))
		abort();
	if (r > 0) {
		if (msg.status < 100 || msg.status > 599 || msg.host != NULL)
			abort();
		if (msg.framing == H1_BODY_UNTIL_CLOSE && msg.keep_alive)
			abort();
		if ((msg.framing == H1_BODY_LENGTH) != (msg.content_length > 0))
			abort();
		if (method && strcmp(method, "HEAD") == 0 && msg.framing != H1_BODY_NONE)
			abort();
		for (i = 0; i < msg.nheaders; i++)
			if (msg.headers[i].value < buf ||
			    msg.headers[i].value + msg.headers[i].value_len > buf + r)
				abort();
	}
	if (len <= BYTEWISE_MAX) {
		for (k = 0; k <= len; k++) {
			r2 = h1_parse_response(buf, k, &lim, method, method ? strlen(method) : 0, &msg2, &err2);
			if (r2 != -2)
				break;
		}
		if (r2 != r || (r > 0 && (k != (size_t)r || msg2.framing != msg.framing)))
			abort();
	}
	free(buf);
	return 0;
}
