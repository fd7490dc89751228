/*
 * tests/fuzz/fuzz_fc_response.c - fc_response_parse and fc_response_fault
 * (sandbox-glue/firecracker.c) on arbitrary bytes: the answers of a
 * Firecracker API socket.
 *
 * Invariants: the result is -2, -1 or a length within the input; -1 always
 * names its error; -2 never once the head bound is passed without a complete
 * head; fed byte by byte the parser says -2 until exactly the length it
 * returns for the whole input; the body lies inside the input; and the fault
 * message is NUL-terminated, bounded and printable ASCII.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox-glue/firecracker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BYTEWISE_MAX 1024
#define OUT_CAP 64

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fc_response r, r2;
	const char *err = NULL, *err2 = NULL;
	char out[OUT_CAP + 1];
	char *buf;
	size_t k, i, olen;
	int n, n2 = -2;

	buf = malloc(size ? size : 1); /* exact size: ASan sees any read past the end */
	if (buf == NULL)
		return 0;
	memcpy(buf, data, size);
	n = fc_response_parse(buf, size, &r, &err);
	if (n == 0 || n < -2 || (n > 0 && (size_t)n > size))
		abort();
	if (n == -1 && err == NULL)
		abort();
	if (n == -2 && size >= FC_RESPONSE_HEAD_MAX + FC_RESPONSE_BODY_MAX)
		abort();
	if (n > 0) {
		if (r.status < 200 || r.status > 599 || r.body_len > FC_RESPONSE_BODY_MAX ||
		    r.body_off + r.body_len != (size_t)n || r.body_off > FC_RESPONSE_HEAD_MAX)
			abort();
		if ((r.status == 204 || r.status == 304) && r.body_len != 0)
			abort();
		memset(out, 'z', sizeof(out));
		fc_response_fault(buf + r.body_off, r.body_len, out, OUT_CAP);
		olen = strnlen(out, OUT_CAP);
		if (olen == OUT_CAP)
			abort();
		for (i = 0; i < olen; i++)
			if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] >= 0x7f)
				abort();
	}
	if (size <= BYTEWISE_MAX) {
		for (k = 0; k <= size; k++) {
			n2 = fc_response_parse(buf, k, &r2, &err2);
			if (n2 != -2)
				break;
		}
		if (n2 != n || (n > 0 && (k != (size_t)n || r2.status != r.status || r2.body_len != r.body_len)))
			abort();
	}
	/* the fault extractor on the raw bytes, with a tiny and a zero capacity */
	fc_response_fault(buf, size, out, 2);
	if (out[1] != '\0' && out[0] != '\0')
		abort();
	fc_response_fault(buf, size, out, 0);
	free(buf);
	return 0;
}
