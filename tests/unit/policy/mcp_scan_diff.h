/*
 * tests/unit/policy/mcp_scan_diff.h - the list-result scanner
 * (policy/mcp_scan.c) against the jansson path (policy_mcp_parse and
 * policy_mcp_list_filter, as proxy/judge/mcp_resp.c's filter_text uses
 * them) on one text: shared by tests/unit/policy/test_mcp_scan.c and
 * tests/fuzz/fuzz_mcp_scan.c.
 */
#ifndef SLUICE_TESTS_UNIT_POLICY_MCP_SCAN_DIFF_H
#define SLUICE_TESTS_UNIT_POLICY_MCP_SCAN_DIFF_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/mcp.h"

#define DIFF_UNREAD (-3)  /* the reader refuses the text (the gateway then reads it as an error answer or refuses it) */
#define DIFF_OTHER (-4)   /* read, but not one response with a result (a batch, a request, an error) */

/* The jansson path: removed count (*<out> its compact text, malloc'd), 0, -1 refused, DIFF_UNREAD or DIFF_OTHER. */
static long
diff_ref(const struct policy *p, const struct policy_host *h, enum policy_mcp_method list, const char *s, size_t n,
         char **out, json_t **id)
{
	struct policy_mcp_body b;
	enum policy_mcp_error err;
	long x;

	*out = NULL;
	*id = NULL;
	if (policy_mcp_parse(s, n, &b, &err) != 0) {
		policy_mcp_body_dispose(&b);
		return DIFF_UNREAD;
	}
	if (b.batch || b.nmsgs != 1 || b.msgs[0].kind != POLICY_MCP_RESPONSE || b.msgs[0].result == NULL) {
		policy_mcp_body_dispose(&b);
		return DIFF_OTHER;
	}
	*id = json_deep_copy(b.msgs[0].id);
	x = policy_mcp_list_filter(p, h, list, json_object_get(b.root, "result"));
	if (x > 0 && b.inexact)
		x = -1;
	if (x > 0 && (*out = json_dumps(b.root, JSON_COMPACT)) == NULL)
		x = -1;
	policy_mcp_body_dispose(&b);
	return x;
}

/*
 * Both paths on <s>/<n> for <list>: 1 when the scanner read it and agrees
 * with jansson (same count, same kept entries: both outputs parse to equal
 * JSON, the scanner's output is read again by both as nothing to remove),
 * 0 when the scanner was not sure (jansson decides), -1 on a disagreement
 * (*<why> says which).
 */
static int
diff_check(struct policy_mcp_scan *sc, const struct policy *p, const struct policy_host *h,
           enum policy_mcp_method list, const char *s, size_t n, const char **why)
{
	char *ref = NULL, *again = NULL;
	json_t *rid = NULL, *aid = NULL, *sid, *a, *b;
	long x, y;
	int r = policy_mcp_scan_read(sc, p, h, s, n), ret = -1;

	*why = "";
	y = diff_ref(p, h, list, s, n, &ref, &rid);
	if (r == -2) {
		ret = 0;
		goto out;
	}
	if (r != 1) {
		*why = "the scanner failed (out of memory?)";
		goto out;
	}
	if (y == DIFF_UNREAD || y == DIFF_OTHER) {
		*why = y == DIFF_UNREAD ? "the scanner read a text the reader refuses" : "the scanner read a non-response";
		goto out;
	}
	sid = json_loadb(sc->id, sc->id_len, JSON_DECODE_ANY, NULL);
	if (sid == NULL || !json_equal(sid, rid)) {
		json_decref(sid);
		*why = "the scanner read another id";
		goto out;
	}
	json_decref(sid);
	x = policy_mcp_scan_filter(sc, list);
	if (x == -2 ? y != -1 : x != y) {
		*why = "the scanner and the reader remove a different count (or one refuses)";
		goto out;
	}
	if (x > 0) {
		a = json_loadb(sc->out, sc->outlen, JSON_REJECT_DUPLICATES, NULL);
		b = json_loads(ref, JSON_REJECT_DUPLICATES, NULL);
		ret = a != NULL && b != NULL && json_equal(a, b) ? 1 : -1;
		json_decref(a);
		json_decref(b);
		if (ret != 1) {
			*why = "the outputs differ";
			goto out;
		}
		/* what the scanner wrote is filtered for good, by the reader too */
		if (diff_ref(p, h, list, sc->out, sc->outlen, &again, &aid) != 0) {
			*why = "the reader would remove more from the scanner's output";
			ret = -1;
			goto out;
		}
	}
	ret = 1;
out:
	free(ref);
	free(again);
	json_decref(rid);
	json_decref(aid);
	return ret;
}

#endif
