/*
 * proxy/h2/h2fields.c - an HTTP/2 header block as nghttp2 delivers it, field by
 * field, collected for translation once the block is whole: both sides of
 * the gateway (h2srv.c toward clients, h2up_stream.c toward upstreams) use
 * it.  Fields are kept as (u32 name length, u32 value length, name, value).
 */
#include <string.h>
#include <event2/buffer.h>
#include "proxy/h2/h2.h"

int
h2_fields_add(struct evbuffer *hdr, size_t *nfields, size_t max_fields, size_t max_bytes, const uint8_t *name,
              size_t nlen, const uint8_t *value, size_t vlen)
{
	uint32_t l[2] = {(uint32_t)nlen, (uint32_t)vlen};

	if (*nfields >= max_fields || evbuffer_get_length(hdr) + nlen + vlen > max_bytes)
		return -1;
	evbuffer_add(hdr, l, sizeof(l));
	evbuffer_add(hdr, name, nlen);
	evbuffer_add(hdr, value, vlen);
	(*nfields)++;
	return 0;
}

void
h2_fields_nva(struct evbuffer *hdr, size_t nfields, nghttp2_nv *nva)
{
	uint8_t *b = evbuffer_pullup(hdr, -1);
	size_t i, off = 0;
	uint32_t l[2];

	for (i = 0; i < nfields; i++) {
		memcpy(l, b + off, sizeof(l));
		nva[i] = (nghttp2_nv){b + off + 8, b + off + 8 + l[0], l[0], l[1], 0};
		off += 8 + l[0] + l[1];
	}
}

int
h2_fields_invalid(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                  const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
	(void)ng;
	(void)f;
	(void)name;
	(void)nlen;
	(void)value;
	(void)vlen;
	(void)flags;
	(void)arg;
	return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}
