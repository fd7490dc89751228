/*
 * fuzz_audit_checkpoints.c - the small text parsers of the audit reader on
 * arbitrary bytes: checkpoint lines, key files, times (--since/--until) and
 * --status, and terminal escaping.  Properties: parsed checkpoints are 64
 * lowercase hex with a seq in range; escaping never emits a control byte and
 * respects its width.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/sluice.h"
#include "audit/audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct audit_checkpoints cp = {0};
	struct audit_filter f;
	struct audit_key key;
	const char *err = NULL;
	char text[256], esc[128];
	size_t i, k, w;
	int64_t t;

	if (audit_checkpoints_parse(&cp, (const char *)data, size, 1) < 0)
		abort();  /* far below AUDIT_CHECKPOINTS_MAX */
	audit_checkpoints_sort(&cp);
	for (i = 0; i < cp.n; i++) {
		if (cp.v[i].seq < 1 || cp.v[i].seq > AUDIT_SEQ_MAX || strlen(cp.v[i].hash) != AUDIT_HASH_HEX ||
		    (i > 0 && cp.v[i - 1].seq > cp.v[i].seq))
			abort();
		for (k = 0; k < AUDIT_HASH_HEX; k++)
			if (!((cp.v[i].hash[k] >= '0' && cp.v[i].hash[k] <= '9') || (cp.v[i].hash[k] >= 'a' && cp.v[i].hash[k] <= 'f')))
				abort();
	}
	audit_checkpoints_dispose(&cp);
	if (audit_key_parse((const char *)data, size, &key, &err) == 0 && (key.seq < 1 || key.seq > AUDIT_SEQ_MAX))
		abort();
	k = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
	memcpy(text, data, k);
	text[k] = '\0';
	(void)audit_time_parse(text, 1796098027123LL, &t);
	audit_filter_init(&f);
	(void)audit_filter_status(&f, text);
	for (w = 0; w < 40; w += 13) {
		esc[0] = '\0';
		if (audit_term_escape(esc, sizeof(esc), (const char *)data, size, w) > w)
			abort();
		for (i = 0; esc[i] != '\0'; i++)
			if ((unsigned char)esc[i] < 0x20 || (unsigned char)esc[i] >= 0x7f)
				abort();
	}
	return 0;
}
