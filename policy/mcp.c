/*
 * policy/mcp.c - the JSON-RPC 2.0 / MCP message reader (policy/mcp.h).
 *
 * Strict on purpose: the gateway judges the message the server will act
 * on, so every way two readers could see different messages is refused.
 * jansson parses with JSON_REJECT_DUPLICATES after the depth pre-scan of
 * cond_json.c; a message may hold only the members of its kind (jsonrpc,
 * id, method, params; or jsonrpc, id, result | error), compared byte for
 * byte and under case folding (Go's encoding/json, used by MCP servers,
 * reads "Method" as method); the same for the params members a rule reads
 * (name, uri, arguments).
 */
#include <stdlib.h>
#include <string.h>

#include "common/fold.h"
#include "common/sluice.h"
#include "cond_int.h"
#include "policy/mcp.h"

static const struct {
	const char *s;
	enum policy_mcp_method m;
} methods[] = {
	{"tools/call", POLICY_MCP_M_TOOLS_CALL},         {"resources/read", POLICY_MCP_M_RESOURCES_READ},
	{"prompts/get", POLICY_MCP_M_PROMPTS_GET},       {"tools/list", POLICY_MCP_M_TOOLS_LIST},
	{"resources/list", POLICY_MCP_M_RESOURCES_LIST}, {"prompts/list", POLICY_MCP_M_PROMPTS_LIST},
};

enum policy_mcp_method
policy_mcp_method_of(const char *method, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strlen(methods[i].s) == len && memcmp(methods[i].s, method, len) == 0)
			return methods[i].m;
	return POLICY_MCP_M_OTHER;
}

const char *
policy_mcp_strerror(enum policy_mcp_error e)
{
	switch (e) {
	case POLICY_MCP_OK:
		return "ok";
	case POLICY_MCP_E_JSON:
		return "the body is not valid JSON (or not UTF-8, or nested over 64 levels)";
	case POLICY_MCP_E_DUPLICATE:
		return "the body has a duplicate key";
	case POLICY_MCP_E_NOT_OBJECT:
		return "a JSON-RPC message is not an object";
	case POLICY_MCP_E_BATCH:
		return "a batch is empty or has more than 64 messages";
	case POLICY_MCP_E_VERSION:
		return "jsonrpc is not \"2.0\"";
	case POLICY_MCP_E_MEMBER:
		return "a message has a member its kind does not have (or one that differs from a known one by case)";
	case POLICY_MCP_E_ID:
		return "the id is missing, null, not a string or an integer, or too long";
	case POLICY_MCP_E_METHOD:
		return "the method is not a non-empty string of at most 128 printable bytes";
	case POLICY_MCP_E_PARAMS:
		return "params is not an object";
	case POLICY_MCP_E_ARGUMENTS:
		return "params.arguments is not an object";
	case POLICY_MCP_E_NAME:
		return "params.name is not a tool name (1 to 128 of A-Z a-z 0-9 _ . -)";
	case POLICY_MCP_E_URI:
		return "params.uri is not a string of 1 to 4096 printable bytes";
	case POLICY_MCP_E_RESPONSE:
		return "a response needs exactly one of result and error, each an object";
	case POLICY_MCP_E_NOMEM:
		return "out of memory";
	}
	return "malformed JSON-RPC message";
}

int
policy_mcp_name_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > POLICY_MCP_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-'))
			return 0;
	}
	return 1;
}

int
policy_mcp_printable(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

/*
 * Every key of <obj> is one of <keys> (byte for byte), and none differs from
 * one of them only by case folding: 0, or -1.
 */
static int
members_ok(json_t *obj, const char *const *keys, size_t nkeys)
{
	const char *k;
	json_t *v;
	size_t n, i;

	json_object_keylen_foreach(obj, k, n, v) {
		int known = 0;

		for (i = 0; i < nkeys; i++)
			if (strlen(keys[i]) == n && memcmp(keys[i], k, n) == 0)
				known = 1;
		if (!known)
			return -1;
	}
	return 0;
}

/* 1 if <obj> holds a key that folds to <key> but is not it. */
static int
folds_to(const json_t *obj, const char *key)
{
	return policy_json_key_ambiguous(obj, key, strlen(key));
}

static int
id_ok(const json_t *id)
{
	if (json_is_integer(id))
		return 1;
	return json_is_string(id) && json_string_length(id) <= POLICY_MCP_ID_MAX &&
	       policy_mcp_printable(json_string_value(id), json_string_length(id));
}

/* params.name, params.uri and params.arguments of the methods a rule reads. */
static enum policy_mcp_error
read_params(struct policy_mcp_msg *m)
{
	const json_t *p = m->params, *v;

	if (p == NULL) {
		if (m->method_id == POLICY_MCP_M_TOOLS_CALL || m->method_id == POLICY_MCP_M_PROMPTS_GET)
			return POLICY_MCP_E_NAME;
		return m->method_id == POLICY_MCP_M_RESOURCES_READ ? POLICY_MCP_E_URI : POLICY_MCP_OK;
	}
	switch (m->method_id) {
	case POLICY_MCP_M_TOOLS_CALL:
	case POLICY_MCP_M_PROMPTS_GET:
		if (folds_to(p, "name") || folds_to(p, "arguments"))
			return POLICY_MCP_E_MEMBER;
		v = json_object_get(p, "name");
		if (!json_is_string(v) || !policy_mcp_name_ok(json_string_value(v), json_string_length(v)))
			return POLICY_MCP_E_NAME;
		m->name = json_string_value(v);
		m->name_len = json_string_length(v);
		v = json_object_get(p, "arguments");
		if (v != NULL && !json_is_object(v))
			return POLICY_MCP_E_ARGUMENTS;
		m->arguments = v;
		return POLICY_MCP_OK;
	case POLICY_MCP_M_RESOURCES_READ:
		if (folds_to(p, "uri"))
			return POLICY_MCP_E_MEMBER;
		v = json_object_get(p, "uri");
		if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > POLICY_MCP_URI_MAX ||
		    !policy_mcp_printable(json_string_value(v), json_string_length(v)))
			return POLICY_MCP_E_URI;
		m->name = json_string_value(v);
		m->name_len = json_string_length(v);
		return POLICY_MCP_OK;
	default:
		return POLICY_MCP_OK;
	}
}

static enum policy_mcp_error
read_msg(json_t *o, struct policy_mcp_msg *m)
{
	static const char *const req_members[] = {"jsonrpc", "id", "method", "params"};
	static const char *const resp_members[] = {"jsonrpc", "id", "result", "error"};
	const json_t *v, *method;

	memset(m, 0, sizeof(*m));
	m->obj = o;
	if (!json_is_object(o))
		return POLICY_MCP_E_NOT_OBJECT;
	v = json_object_get(o, "jsonrpc");
	if (!json_is_string(v) || json_string_length(v) != 3 || memcmp(json_string_value(v), "2.0", 3) != 0)
		return POLICY_MCP_E_VERSION;
	method = json_object_get(o, "method");
	if (method != NULL || (json_object_get(o, "result") == NULL && json_object_get(o, "error") == NULL)) {
		if (members_ok(o, req_members, 4) != 0)
			return POLICY_MCP_E_MEMBER;
		if (!json_is_string(method) || json_string_length(method) == 0 ||
		    json_string_length(method) > POLICY_MCP_METHOD_MAX ||
		    !policy_mcp_printable(json_string_value(method), json_string_length(method)))
			return POLICY_MCP_E_METHOD;
		m->method = json_string_value(method);
		m->method_len = json_string_length(method);
		m->method_id = policy_mcp_method_of(m->method, m->method_len);
		v = json_object_get(o, "id");
		if (v != NULL && !id_ok(v))
			return POLICY_MCP_E_ID;
		m->id = v;
		m->kind = v != NULL ? POLICY_MCP_REQUEST : POLICY_MCP_NOTIFICATION;
		v = json_object_get(o, "params");
		if (v != NULL && !json_is_object(v))
			return POLICY_MCP_E_PARAMS;
		m->params = v;
		return read_params(m);
	}
	if (members_ok(o, resp_members, 4) != 0)
		return POLICY_MCP_E_MEMBER;
	m->kind = POLICY_MCP_RESPONSE;
	m->method_id = POLICY_MCP_M_NONE;
	v = json_object_get(o, "id");
	if (v == NULL || !id_ok(v))
		return POLICY_MCP_E_ID;
	m->id = v;
	m->result = json_object_get(o, "result");
	m->error = json_object_get(o, "error");
	if ((m->result == NULL) == (m->error == NULL) || (m->result != NULL && !json_is_object(m->result)) ||
	    (m->error != NULL && !json_is_object(m->error)))
		return POLICY_MCP_E_RESPONSE;
	return POLICY_MCP_OK;
}

int
policy_mcp_parse(const char *body, size_t len, struct policy_mcp_body *out, enum policy_mcp_error *err)
{
	json_error_t jerr;
	size_t i, n;

	memset(out, 0, sizeof(*out));
	*err = POLICY_MCP_E_JSON;
	if (policy_json_prescan(body, len, &out->inexact) != 0)
		return -1;
	out->root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (out->root == NULL) {
		if (json_error_code(&jerr) == json_error_duplicate_key)
			*err = POLICY_MCP_E_DUPLICATE;
		else if (json_error_code(&jerr) == json_error_out_of_memory)
			*err = POLICY_MCP_E_NOMEM;
		return -1;
	}
	if (!json_is_array(out->root)) {
		out->nmsgs = 1;
		out->msgs = &out->one;
		*err = read_msg(out->root, &out->one);
		out->one.inexact = out->inexact;
		return *err == POLICY_MCP_OK ? 0 : -1;
	}
	out->batch = 1;
	n = json_array_size(out->root);
	if (n == 0 || n > POLICY_MCP_BATCH_MAX) {
		*err = POLICY_MCP_E_BATCH;
		return -1;
	}
	out->msgs = calloc(n, sizeof(*out->msgs));
	if (out->msgs == NULL) {
		*err = POLICY_MCP_E_NOMEM;
		return -1;
	}
	for (i = 0; i < n; i++) {
		out->nmsgs = i + 1;
		*err = read_msg(json_array_get(out->root, i), &out->msgs[i]);
		out->msgs[i].inexact = out->inexact;
		if (*err != POLICY_MCP_OK) {
			out->bad_index = i;
			return -1;
		}
	}
	return 0;
}

void
policy_mcp_body_dispose(struct policy_mcp_body *b)
{
	if (b->msgs != &b->one)
		free(b->msgs);
	if (b->root != NULL)
		json_decref(b->root);
	memset(b, 0, sizeof(*b));
}
