/*
 * tests/fuzz/fuzz_cond_form.c - form and query conditions on hostile bytes:
 * percent-decoding, repeated fields, exact decimals, form budgets.
 */
#include "fuzz_cond_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  f.test:\n"
	"    rules:\n"
	"      - { id: q, deny: { query: { debug: { exists: true }, page: { regex: \"[0-9]+\" } } } }\n"
	"      - id: pay\n"
	"        allow:\n"
	"          form: { amount: { min: 0, max: 5000 }, currency: { in: [usd, eur] }, \"a b\": { not_in: [\"%\"] } }\n"
	"          budget: { sum: \"form:amount\", max: 200 }\n"
	"      - { id: h, hold: { form: { x: { eq: 1 } } } }\n";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct policy *pol = fc_policy(yaml);
	char q[512];
	size_t n = size < sizeof(q) - 1 ? size : sizeof(q) - 1;

	fc_decide(pol, "f.test", "POST", "/", "application/x-www-form-urlencoded", NULL, data, size, 0);
	/* the same bytes as a query string (NUL-free prefix) */
	memcpy(q, data, n);
	q[n] = '\0';
	fc_decide(pol, "f.test", "GET", "/", "text/plain", q, data, 0, 0);
	return 0;
}
