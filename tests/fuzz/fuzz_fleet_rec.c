/*
 * tests/fuzz/fuzz_fleet_rec.c - the sealed records of fleet approvals
 * (proxy/store/fleet_rec.c).  The first byte picks the mode: even, the rest
 * is a record as Redis would hand it back (framing, MAC, then the parser:
 * only a record that verifies reaches the parser, so this mostly proves the
 * framing never opens a forgery); odd, the rest is a payload sealed here
 * with the fuzzer's key first, so the strict JSON reader sees every input.
 * A record that opens is sealed again from what was read and must open to
 * the same fields (the reader and the writer agree), and with another key
 * it must not open.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/hex.h"
#include "proxy/store/fleet.h"

static const uint8_t KEY[32] = "fuzz-fleet-key-0123456789abcdef";
static const uint8_t KEY2[32] = "fuzz-fleet-key-0123456789abcdeF";
static char rec[FLEET_REC_MAX + 1], again[FLEET_REC_MAX + 1];

static int
same(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void
hold_check(const char *p, size_t n)
{
	struct fleet_hold h, o;
	size_t i;
	long m;

	if (fleet_hold_open(p, n, KEY, sizeof(KEY), &h) != FLEET_OK)
		return;
	if (fleet_hold_open(p, n, KEY2, sizeof(KEY2), &o) == FLEET_OK)
		abort();
	if (strlen(h.id) != FLEET_ID_LEN || strlen(h.gw) == 0 || strlen(h.body_sha256) != 64 || h.nfields > POLICY_FIELDS_MAX)
		abort();
	m = fleet_hold_seal(&h, KEY, sizeof(KEY), again, sizeof(again));
	if (m >= 0) {
		if (fleet_hold_open(again, (size_t)m, KEY, sizeof(KEY), &o) != FLEET_OK)
			abort();
		if (strcmp(o.id, h.id) != 0 || strcmp(o.gw, h.gw) != 0 || !same(o.sandbox, h.sandbox) ||
		    !same(o.rule, h.rule) || strcmp(o.method, h.method) != 0 || strcmp(o.host, h.host) != 0 ||
		    strcmp(o.path, h.path) != 0 || strcmp(o.body_sha256, h.body_sha256) != 0 ||
		    o.created_ms != h.created_ms || o.expiry_ms != h.expiry_ms || o.nfields != h.nfields)
			abort();
		for (i = 0; i < h.nfields; i++)
			if (strcmp(o.fields[i].place, h.fields[i].place) != 0 || strcmp(o.fields[i].value, h.fields[i].value) != 0)
				abort();
		fleet_hold_dispose(&o);
	}
	fleet_hold_dispose(&h);
}

static void
decision_check(const char *p, size_t n)
{
	struct fleet_decision d, o;
	long m;

	if (fleet_decision_open(p, n, KEY, sizeof(KEY), &d) != FLEET_OK)
		return;
	if (fleet_decision_open(p, n, KEY2, sizeof(KEY2), &o) == FLEET_OK)
		abort();
	m = fleet_decision_seal(&d, KEY, sizeof(KEY), again, sizeof(again));
	if (m < 0 || fleet_decision_open(again, (size_t)m, KEY, sizeof(KEY), &o) != FLEET_OK ||
	    memcmp(&o, &d, sizeof(o)) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t md[32];
	unsigned mdlen = 0;
	size_t n;

	if (size < 1 || size > FLEET_REC_MAX)
		return 0;
	if ((data[0] & 1) == 0) {
		hold_check((const char *)data + 1, size - 1);
		decision_check((const char *)data + 1, size - 1);
		return 0;
	}
	n = size - 1;
	if (n + 65 > FLEET_REC_MAX ||
	    HMAC(EVP_sha256(), KEY, sizeof(KEY), data + 1, n, md, &mdlen) == NULL)
		return 0;
	hex_encode(rec, md, sizeof(md));
	rec[64] = '.';
	memcpy(rec + 65, data + 1, n);
	hold_check(rec, n + 65);
	decision_check(rec, n + 65);
	return 0;
}
