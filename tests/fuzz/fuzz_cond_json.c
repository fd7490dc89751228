/*
 * tests/fuzz/fuzz_cond_json.c - JSON conditions on hostile bodies: the
 * nesting pre-scan, jansson with duplicate keys refused, path selection with
 * [*] and .*, exact numbers, budgets summed over [*].
 */
#include "fuzz_cond_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  j.test:\n"
	"    rules:\n"
	"      - { id: d, deny: { json: { \"$.items[*].amount\": { min: 1000 } } } }\n"
	"      - { id: h, hold: { json: { \"$.*.x\": { regex: \"a+b\" } } } }\n"
	"      - id: a\n"
	"        allow:\n"
	"          json: { \"$.c\": { in: [x, 1, \"2\"] }, \"$.m[0]['k k']\": { not_in: [y] }, \"$.n\": { min: -1.5, max: 1000 } }\n"
	"          budget: { sum: \"json:$.items[*].n\", max: 100 }\n"
	"      - { id: e, allow: { json: { \"$.e\": { exists: true }, \"$.f\": { absent: true }, \"$.g\": true } } }\n";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct policy *pol = fc_policy(yaml);

	fc_decide(pol, "j.test", "POST", "/", "application/json", NULL, data, size, 0);
	return 0;
}
