/*
 * proxy/core/h1_out.c - HTTP/1.1 head lines and chunk sizes into an
 * evbuffer, without printf (h1_out.h).
 */
#include <string.h>

#include "proxy/core/h1_out.h"

const char *
h1_out_utoa(char *buf, size_t cap, uint64_t v, unsigned base, size_t *len)
{
	static const char digits[] = "0123456789abcdef";
	char *p = buf + cap;

	do {
		*--p = digits[v % base];
		v /= base;
	} while (v != 0 && p > buf);
	*len = (size_t)(buf + cap - p);
	return p;
}

int
h1_out_pieces(struct evbuffer *out, const struct h1_out_piece *pc, size_t n)
{
	struct evbuffer_iovec v;
	size_t i, total = 0;
	char *p;

	for (i = 0; i < n; i++)
		total += pc[i].len;
	if (total == 0)
		return 0;
	if (evbuffer_reserve_space(out, (ev_ssize_t)total, &v, 1) != 1 || v.iov_len < total)
		return -1;
	p = v.iov_base;
	for (i = 0; i < n; i++) {
		if (pc[i].len > 0)
			memcpy(p, pc[i].p, pc[i].len);
		p += pc[i].len;
	}
	v.iov_len = total;
	return evbuffer_commit_space(out, &v, 1);
}

int
h1_out_field(struct evbuffer *out, const char *name, size_t nlen, const char *value, size_t vlen)
{
	const struct h1_out_piece pc[] = {{name, nlen}, {": ", 2}, {value, vlen}, {"\r\n", 2}};

	return h1_out_pieces(out, pc, sizeof(pc) / sizeof(pc[0]));
}

int
h1_out_status(struct evbuffer *out, int status, const char *reason, size_t rlen)
{
	char num[H1_OUT_NUM_MAX];
	size_t nl;
	const char *s = h1_out_utoa(num, sizeof(num), status < 0 ? 0 : (uint64_t)status, 10, &nl);
	const struct h1_out_piece pc[] = {{"HTTP/1.1 ", 9}, {s, nl}, {" ", 1}, {reason, rlen}, {"\r\n", 2}};

	if (status < 0)
		return -1;
	return h1_out_pieces(out, pc, sizeof(pc) / sizeof(pc[0]));
}

int
h1_out_uint_field(struct evbuffer *out, const char *name, size_t nlen, uint64_t v, int end)
{
	char num[H1_OUT_NUM_MAX];
	size_t nl;
	const char *s = h1_out_utoa(num, sizeof(num), v, 10, &nl);
	const struct h1_out_piece pc[] = {{name, nlen}, {": ", 2}, {s, nl}, {"\r\n\r\n", end ? 4 : 2}};

	return h1_out_pieces(out, pc, sizeof(pc) / sizeof(pc[0]));
}

int
h1_out_chunk_size(struct evbuffer *out, uint64_t n)
{
	char num[H1_OUT_NUM_MAX];
	size_t nl;
	const char *s = h1_out_utoa(num, sizeof(num), n, 16, &nl);
	const struct h1_out_piece pc[] = {{s, nl}, {"\r\n", 2}};

	return h1_out_pieces(out, pc, sizeof(pc) / sizeof(pc[0]));
}
