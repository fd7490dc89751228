/*
 * tests/fuzz/fuzz_cond_graphql.c - the GraphQL lexer and parser on hostile
 * documents, directly and inside a JSON body through the rules.
 */
#include "fuzz_cond_common.h"
#include "policy/cond_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  g.test:\n"
	"    rules:\n"
	"      - { id: d, deny: { graphql: { fields: { regex: \"delete.*\" } } } }\n"
	"      - { id: a, allow: { graphql: { type: [query, mutation], name: { in: [A, B] }, fields: { not_in: [x] } } } }\n"
	"      - { id: h, hold: { graphql: { type: subscription } } }\n";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct policy *pol = fc_policy(yaml);
	static struct policy_gql_doc doc;
	const char *err = NULL;
	json_t *o;
	char *body;
	size_t i;

	doc.nops = doc.nfields = 0;
	if (policy_gql_parse((const char *)data, size, &doc, &err) == 0) {
		if (doc.nops == 0 || doc.nops > GQL_OPS_MAX || doc.nfields > GQL_FIELDS_MAX)
			__builtin_trap();
		for (i = 0; i < doc.nfields; i++)
			if (doc.fields[i].s < (const char *)data || doc.fields[i].s + doc.fields[i].len > (const char *)data + size)
				__builtin_trap();
	} else if (err == NULL) {
		__builtin_trap();
	}
	o = json_object();
	json_object_set_new(o, "query", json_stringn((const char *)data, size));
	json_object_set_new(o, "operationName", json_string("A"));
	body = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (body != NULL) {
		fc_decide(pol, "g.test", "POST", "/graphql", "application/json", NULL, (const uint8_t *)body, strlen(body), 0);
		free(body);
	}
	return 0;
}
