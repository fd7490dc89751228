/*
 * policy/mcp_list.c - hidden tools stay hidden: tools/list, resources/list
 * and prompts/list results rewritten to list only what some rule could
 * allow (policy/mcp.h).
 *
 * The predicate reads the compiled rules the way policy_decide would walk
 * them for a call of the entry (a tools/call, resources/read or
 * prompts/get POST to the host's endpoint): the first enforced rule that
 * could apply decides; an allow or hold rule shows the entry, a deny rule
 * with no condition besides method, path and mcp hides it, and a deny
 * rule with conditions lets the walk go on (the call might pass it).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/sluice.h"
#include "cond_int.h"
#include "mcp_int.h"

static enum policy_mcp_method
call_of(enum policy_mcp_method list)
{
	switch (list) {
	case POLICY_MCP_M_TOOLS_LIST:
		return POLICY_MCP_M_TOOLS_CALL;
	case POLICY_MCP_M_RESOURCES_LIST:
		return POLICY_MCP_M_RESOURCES_READ;
	case POLICY_MCP_M_PROMPTS_LIST:
		return POLICY_MCP_M_PROMPTS_GET;
	default:
		return POLICY_MCP_M_NONE;
	}
}

static const char *
call_name(enum policy_mcp_method call)
{
	return call == POLICY_MCP_M_TOOLS_CALL ? "tools/call" : call == POLICY_MCP_M_RESOURCES_READ ? "resources/read"
	                                                                                           : "prompts/get";
}

/* 0 when <r>'s path cannot be <ep> (NULL: the host has no endpoint, any path could be). */
static int
path_could(const struct policy *p, const struct policy_rule *r, const char *ep)
{
	if (ep == NULL)
		return 1;
	if (r->path_kind == POLICY_PATH_GLOB)
		return policy_glob_match(&r->glob, ep, strlen(ep));
	if (r->path_kind == POLICY_PATH_REGEX)
		return policy_regex_match(p, r->re, ep, strlen(ep)) != 0; /* -1, cannot judge: it could */
	return 1;
}

int
policy_mcp_visible(const struct policy *p, const struct policy_host *h, enum policy_mcp_method list, const char *name,
                   size_t n)
{
	enum policy_mcp_method call = call_of(list);
	const char *cm;
	size_t i, j;

	if (call == POLICY_MCP_M_NONE)
		return 0;
	/* an entry the reader would refuse to call is no use to show */
	if (call == POLICY_MCP_M_RESOURCES_READ ? n == 0 || n > POLICY_MCP_URI_MAX || !policy_mcp_printable(name, n)
	                                        : !policy_mcp_name_ok(name, n))
		return 0;
	if (!h->has_rules || h->mode == POLICY_MODE_REPORT)
		return 1;
	cm = call_name(call);
	for (i = 0; i < h->nrules; i++) {
		const struct policy_rule *r = &h->rules[i];
		int matches = 1;

		if (r->mode != POLICY_MODE_ENFORCE || !policy_rule_posts(r) || !path_could(p, r, h->mcp_endpoint))
			continue;
		if (r->mcp != NULL) {
			if (!policy_mcp_method_in(r->mcp, cm, strlen(cm)))
				continue;
			if (r->mcp->ntools > 0) {
				matches = 0;
				for (j = 0; j < r->mcp->ntools && !matches; j++)
					matches = policy_mcp_tool_match(&r->mcp->tools[j], call, name, n);
			}
			if (!matches)
				continue;
		}
		if (r->verdict != POLICY_REQ_DENY)
			return 1;
		if (r->nconds == 0 && r->gql == NULL && r->git == NULL && r->sum == NULL)
			return 0;
	}
	return p->default_allow;
}

const char *
policy_mcp_list_key(enum policy_mcp_method list)
{
	return list == POLICY_MCP_M_TOOLS_LIST ? "tools" : list == POLICY_MCP_M_RESOURCES_LIST ? "resources"
	                                                 : list == POLICY_MCP_M_PROMPTS_LIST ? "prompts" : NULL;
}

const char *
policy_mcp_entry_field(enum policy_mcp_method list)
{
	return list == POLICY_MCP_M_RESOURCES_LIST ? "uri" : "name";
}

/* policy_mcp_visible through <vc>. */
static int
visible_cached(struct policy_mcp_vcache *vc, const struct policy *p, const struct policy_host *h,
               enum policy_mcp_method list, const char *name, size_t n)
{
	uint32_t x = 2166136261u;  /* FNV-1a */
	size_t i;

	if (vc == NULL || n > POLICY_MCP_VCACHE_NAME)
		return policy_mcp_visible(p, h, list, name, n);
	if (vc->p != p || vc->h != h) {
		memset(vc, 0, sizeof(*vc));
		vc->p = p;
		vc->h = h;
	}
	for (i = 0; i < n; i++)
		x = (x ^ (unsigned char)name[i]) * 16777619u;
	x = (x ^ (uint32_t)list) * 16777619u;
	i = x % POLICY_MCP_VCACHE;
	if (vc->e[i].used && vc->e[i].list == (unsigned char)list && vc->e[i].len == n &&
	    memcmp(vc->e[i].name, name, n) == 0)
		return vc->e[i].visible;
	vc->e[i].used = 1;
	vc->e[i].list = (unsigned char)list;
	vc->e[i].len = (unsigned char)n;
	memcpy(vc->e[i].name, name, n);
	vc->e[i].visible = (unsigned char)policy_mcp_visible(p, h, list, name, n);
	return vc->e[i].visible;
}

int
policy_mcp_entry_kept(const struct policy *p, const struct policy_host *h, enum policy_mcp_method list, int is_object,
                      const char *name, size_t n, int ambiguous, struct policy_mcp_vcache *vc)
{
	return is_object && name != NULL && !ambiguous && visible_cached(vc, p, h, list, name, n);
}

long
policy_mcp_list_filter(const struct policy *p, const struct policy_host *h, enum policy_mcp_method list,
                       json_t *result)
{
	static const enum policy_mcp_method lists[] = {POLICY_MCP_M_TOOLS_LIST, POLICY_MCP_M_RESOURCES_LIST,
	                                               POLICY_MCP_M_PROMPTS_LIST};
	const char *key = policy_mcp_list_key(list), *field;
	json_t *arr, *keep, *e;
	size_t i, n;
	long removed = 0;

	if (!json_is_object(result))
		return list != POLICY_MCP_M_NONE ? -1 : 0;
	for (i = 0; key == NULL && i < sizeof(lists) / sizeof(lists[0]); i++)
		if (json_is_array(json_object_get(result, policy_mcp_list_key(lists[i])))) {
			list = lists[i];
			key = policy_mcp_list_key(list);
		}
	if (key == NULL) {
		/* no list under its own name; one under a name that folds to it ("Tools", "toolſ") is a list to a
		 * case-folding client (Go's encoding/json): it cannot be left unfiltered, nor filtered as it reads it */
		for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
			const char *k = policy_mcp_list_key(lists[i]);

			if (policy_json_key_ambiguous(result, k, strlen(k)))
				return -1;
		}
		return 0; /* no list: nothing to hide */
	}
	arr = json_object_get(result, key);
	/* "Tools" beside "tools": a case-folding client could read either */
	if (!json_is_array(arr) || policy_json_key_ambiguous(result, key, strlen(key)))
		return -1;
	n = json_array_size(arr);
	if (n > POLICY_MCP_LIST_MAX)
		return -1;
	field = policy_mcp_entry_field(list);
	if ((keep = json_array()) == NULL)
		return -1;
	json_array_foreach(arr, i, e) {
		json_t *v = json_object_get(e, field);

		if (!policy_mcp_entry_kept(p, h, list, json_is_object(e), json_is_string(v) ? json_string_value(v) : NULL,
		                           json_string_length(v),
		                           json_is_object(e) && policy_json_key_ambiguous(e, field, strlen(field)), NULL)) {
			removed++;
			continue;
		}
		if (json_array_append(keep, e) != 0) {
			json_decref(keep);
			return -1;
		}
	}
	if (removed == 0) {
		json_decref(keep);
		return 0;
	}
	if (json_object_set_new(result, key, keep) != 0)
		return -1;
	return removed;
}

long
policy_mcp_filter_text(const struct policy *p, const struct policy_host *h, enum policy_mcp_method list,
                       const char *s, size_t n, char **out, size_t *outlen)
{
	struct policy_mcp_body b;
	enum policy_mcp_error err;
	long total = 0, x;
	size_t i;

	*out = NULL;
	*outlen = 0;
	if (policy_mcp_parse(s, n, &b, &err) != 0) {
		policy_mcp_body_dispose(&b);
		return -1;
	}
	for (i = 0; i < b.nmsgs; i++) {
		json_t *m = b.batch ? json_array_get(b.root, i) : b.root;

		if (b.msgs[i].kind != POLICY_MCP_RESPONSE || b.msgs[i].result == NULL)
			continue;
		/* in a batch the request of each answer is not known here: the shape says */
		x = policy_mcp_list_filter(p, h, b.batch ? POLICY_MCP_M_NONE : list, json_object_get(m, "result"));
		if (x < 0) {
			policy_mcp_body_dispose(&b);
			return -1;
		}
		total += x;
	}
	if (total > 0) {
		*out = json_dumps(b.root, JSON_COMPACT);
		if (*out == NULL)
			total = -1;
		else
			*outlen = strlen(*out);
	}
	policy_mcp_body_dispose(&b);
	return total;
}
