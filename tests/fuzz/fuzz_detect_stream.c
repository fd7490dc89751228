/*
 * fuzz_detect_stream.c - the streaming decoded-view search (secrets/
 * detect_stream.c) against the whole-buffer one (secrets/detect.c).
 *
 * Input: byte 0 picks the mode, bytes 1..4 the cuts, the rest is the text.
 *  - any bytes: the stream's answer is the same for every cut (and byte by
 *    byte); a placeholder in a view both cover (raw, one and two
 *    percent-decodings, JSON unescaping: computed with detect.c's own
 *    decoders on the concatenation) is found by the stream; the bytes
 *    released before a hit never hold the whole placeholder;
 *  - generated (odd mode byte): text, a placeholder encoded in one of the
 *    forms both cover (raw; percent of a byte mask, hex case by mask; %25
 *    double; JSON \u of a byte mask; base64 or base64url of a few bytes, the
 *    placeholder and a few more), text: the differential oracle, the stream
 *    finds it iff ph_detect() finds it in the concatenation.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include "common/sluice.h"
#include "secrets/detect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PH "sluice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789"
#define TEXT_MAX 4096

/* Runs the stream over <t> cut at <c1> < <c2> (or byte by byte with <bytes>): 1 found, 0 not. */
static int
stream(const uint8_t *t, size_t n, size_t c1, size_t c2, int bytes, const uint8_t *ph, size_t phl)
{
	struct ph_stream *s = ph_stream_new();
	size_t cut[4] = {0, c1, c2, n}, k, id = 0, i, rel;
	int r = 0;

	if (ph_stream_add(s, PH, strlen(PH), 1) != 0)
		abort();
	if (bytes) {
		for (i = 0; i < n && r == 0; i++) {
			r = ph_stream_feed(s, t + i, 1, &id);
			rel = i + 1 - ph_stream_held(s);
			if (r == 0 && memmem(t, rel, ph, phl) != NULL)
				abort();  /* released a whole placeholder without finding it */
		}
	} else {
		for (k = 0; k < 3 && r == 0; k++)
			r = ph_stream_feed(s, t + cut[k], cut[k + 1] - cut[k], &id);
	}
	if (r == 0)
		r = ph_stream_end(s, &id);
	if (r < 0 || (r == 1 && id != 1))
		abort();
	ph_stream_free(s);
	return r;
}

/* <p> decoded by <step> (0 percent once, 1 JSON) into a new buffer (*n), or NULL when nothing decodes. */
static uint8_t *
step(const uint8_t *p, size_t *n, int k)
{
	uint8_t *o = malloc(ph_decode_bound(*n));
	long l = k == 0 ? ph_decode_percent_once(p, *n, o) : ph_decode_json(p, *n, o);

	if (l < 0) {
		free(o);
		return NULL;
	}
	*n = (size_t)l;
	return o;
}

/* The views both cover, computed whole with detect.c's decoders: 1 when the placeholder is in one. */
static int
reference(const uint8_t *t, size_t n)
{
	size_t pl = strlen(PH), n1, n2;
	uint8_t *v1, *v2;
	int f = memmem(t, n, PH, pl) != NULL, a, b;

	for (a = 0; a < 2; a++) {
		n1 = n;
		if ((v1 = step(t, &n1, a)) == NULL)
			continue;  /* the view is the raw bytes, and the next step of it is a view of its own */
		f |= memmem(v1, n1, PH, pl) != NULL;
		for (b = 0; b < 2; b++) {
			n2 = n1;
			if ((v2 = step(v1, &n2, b)) != NULL) {
				f |= memmem(v2, n2, PH, pl) != NULL;
				free(v2);
			}
		}
		free(v1);
	}
	return f;
}

static size_t
generate(const uint8_t *d, size_t n, uint8_t *t)
{
	static const char hexu[] = "0123456789ABCDEF", hexl[] = "0123456789abcdef";
	const char *ph = PH;
	size_t pl = strlen(PH), o = 0, i, j1, j2, k;
	uint8_t raw[128];
	unsigned form, mask;
	int len;

	if (n < 8)
		return 0;
	form = d[0] % 6;
	mask = (unsigned)d[1] | (unsigned)d[2] << 8;
	j1 = d[3] % 16 < n - 8 ? d[3] % 16 : 0;  /* text before */
	j2 = d[4] % 16;                            /* text after */
	d += 5;
	n -= 5;
	if (j1 > n)
		j1 = n;
	memcpy(t, d, j1);
	o = j1;
	switch (form) {
	case 0:
		memcpy(t + o, ph, pl);
		o += pl;
		break;
	case 1: /* percent, a byte mask, hex case by mask */
	case 2: /* the same, with %25 for the '%' (double) */
		for (i = 0; i < pl; i++) {
			if (!((mask >> (i % 16)) & 1)) {
				t[o++] = (uint8_t)ph[i];
				continue;
			}
			t[o++] = '%';
			if (form == 2) {
				t[o++] = '2';
				t[o++] = '5';
			}
			t[o++] = (uint8_t)((mask >> ((i + 3) % 16)) & 1 ? hexl : hexu)[(uint8_t)ph[i] >> 4];
			t[o++] = (uint8_t)((mask >> ((i + 5) % 16)) & 1 ? hexl : hexu)[(uint8_t)ph[i] & 15];
		}
		break;
	case 3: /* JSON \u, a byte mask */
		for (i = 0; i < pl; i++) {
			if (!((mask >> (i % 16)) & 1)) {
				t[o++] = (uint8_t)ph[i];
				continue;
			}
			t[o++] = '\\';
			t[o++] = 'u';
			t[o++] = '0';
			t[o++] = '0';
			t[o++] = (uint8_t)hexu[(uint8_t)ph[i] >> 4];
			t[o++] = (uint8_t)((mask >> ((i + 2) % 16)) & 1 ? hexl : hexu)[(uint8_t)ph[i] & 15];
		}
		break;
	default: /* base64 (4) or base64url (5) of up to 3 bytes, the placeholder and up to 3 more */
		k = mask % 4;
		memset(raw, 'x', sizeof(raw));
		memcpy(raw + k, ph, pl);
		len = EVP_EncodeBlock(t + o, raw, (int)(k + pl + (mask >> 2) % 4));
		for (i = 0; form == 5 && i < (size_t)len; i++)
			t[o + i] = t[o + i] == '+' ? '-' : t[o + i] == '/' ? '_' : t[o + i];
		o += (size_t)len;
		break;
	}
	if (j2 > n - j1)
		j2 = n - j1;
	memcpy(t + o, d + j1, j2);
	return o + j2;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t t[TEXT_MAX + 1024];
	const char *ph = PH;
	size_t n, c1, c2, pl = strlen(PH);
	unsigned char found = 0;
	int whole, r;

	if (size < 5)
		return 0;
	if (data[0] & 1) {
		n = generate(data + 5, size - 5, t);
		if (n == 0)
			return 0;
	} else {
		n = size - 5 < TEXT_MAX ? size - 5 : TEXT_MAX;
		memcpy(t, data + 5, n);
	}
	c1 = n > 0 ? ((size_t)data[1] | (size_t)data[2] << 8) % (n + 1) : 0;
	c2 = n > 0 ? ((size_t)data[3] | (size_t)data[4] << 8) % (n + 1) : 0;
	if (c1 > c2) {
		size_t x = c1;
		c1 = c2;
		c2 = x;
	}
	whole = stream(t, n, n, n, 0, (const uint8_t *)ph, pl);
	if (stream(t, n, c1, c2, 0, (const uint8_t *)ph, pl) != whole || stream(t, n, 0, 0, 1, (const uint8_t *)ph, pl) != whole)
		abort();  /* the answer depends on how the stream was cut */
	if (reference(t, n) && !whole)
		abort();  /* a view both cover holds it, the stream missed it */
	if (data[0] & 1) {
		r = ph_detect(t, n, &ph, &pl, 1, &found);
		if (r < 0 || (found != 0) != (whole != 0))
			abort();  /* the differential oracle */
	}
	return 0;
}
