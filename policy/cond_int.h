/*
 * policy/cond_int.h - evaluating conditions against one request: the
 * per-decision context (the body parsed at most once), three-valued results,
 * and the body parsers (JSON, GraphQL, git pkt-lines).  Private to policy/.
 */
#ifndef SLUICE_POLICY_COND_INT_H
#define SLUICE_POLICY_COND_INT_H

#include <jansson.h>

#include "policy/mcp.h"
#include "policy_int.h"

/* Three-valued results: false, true, cannot judge. */
enum { TV_F = 0, TV_T = 1, TV_U = 2 };

enum { CT_NONE = 0, CT_JSON, CT_FORM, CT_GIT, CT_OTHER };

#define GQL_DEFS_MAX 64          /* operations and fragments in one document */
#define GQL_ITEMS_MAX 1024       /* root selections (fields, spreads) in one document */
#define GQL_FIELDS_MAX 1024      /* root fields of every operation of a body, fragments expanded */
#define GQL_OPS_MAX 256          /* operations of a body (a batch holds several documents) */
#define GQL_DEPTH_MAX 64         /* nesting of selections, values and types */
#define GQL_FRAG_DEPTH_MAX 16    /* fragment spreads through fragment spreads */
#define POLICY_GIT_REF_MAX 4096  /* bytes of a ref name in a push */
#define WHY_MAX 512              /* bytes of one explanation */

struct policy_gql_field {
	const char *s;
	size_t len;
};

struct policy_gql_op {
	unsigned type;            /* POLICY_GQL_* */
	const char *name;         /* NULL: anonymous */
	size_t name_len;
};

/* Every operation of a body, and every root field (aliases resolved, fragments expanded). */
struct policy_gql_doc {
	struct policy_gql_op ops[GQL_OPS_MAX];
	size_t nops;
	struct policy_gql_field fields[GQL_FIELDS_MAX];
	size_t nfields;
};

struct policy_git_cmd {
	unsigned kind;            /* POLICY_GIT_* */
	const char *ref;
	size_t ref_len;
};

/* A value found at a place. */
enum { V_STR = 1, V_NUM, V_LIT, V_OTHER };
struct policy_val {
	int kind;
	const char *s;            /* V_STR, V_LIT: the text; V_NUM: exact text when known, else NULL */
	size_t len;
	int num_ok;               /* V_NUM: num holds the exact value */
	struct policy_dec num;
	char tmp[48];
};

/* The last answers of policy_json_key_ambiguous for one parsed body (cond_json.c). */
#define POLICY_FOLD_MEMO 8
struct policy_fold_memo {
	struct {
		const json_t *obj;
		const char *key;
		size_t klen;
		int ambiguous;
	} e[POLICY_FOLD_MEMO];
	unsigned next;
};

struct policy_ctx {
	const struct policy *p;
	const struct policy_request *req;
	int ctype;
	int encoded;              /* Content-Encoding other than identity */
	int head_unknown;         /* the query and headers were not given (policy_decide_request) */
	int json_state;           /* 0 not tried, 1 parsed, -1 failed */
	json_t *json;
	int json_inexact;         /* a real with more digits than a double keeps */
	struct policy_fold_memo fold;  /* for c->json */
	int gql_state;
	struct policy_gql_doc *gql;
	int git_state;
	struct policy_git_cmd *git;
	size_t ngit;
	char *buf;                /* decode buffer for queries and forms */
	size_t bufcap;
	const char *cant;         /* why the last TV_U: static text */
	/* explain */
	char *why;                /* NULL: not explaining */
	int why_set;
	/* mcp: the message judged (c->req->mcp_msg, or the body read once into mcpb) */
	int mcp_state;            /* 0 not tried, 1 read, -1 failed */
	struct policy_mcp_body mcpb;
	const struct policy_mcp_msg *mcp;
	const char *mcp_cant;     /* why it could not be read */
	/* relevant fields of a hold */
	struct policy_decision *cap;
	size_t captext;
};

void policy_ctx_init(struct policy_ctx *c, const struct policy *p, const struct policy_request *req);
void policy_ctx_dispose(struct policy_ctx *c);
/* printf into c->why (once per rule: the first reason wins). */
void policy_ctx_why(struct policy_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int policy_tv_and(int a, int b);
int policy_tv_or(int a, int b);

/* One condition (query/header/json/form), quantified: <all> for allow rules, any for deny/hold. */
int policy_cond_eval(struct policy_ctx *c, const struct policy_cond *cond, int all);
/* The rule's budget sum: TV_T with *<amount>, or TV_U. */
int policy_cond_sum(struct policy_ctx *c, const struct policy_cond *sum, int64_t *amount);
int policy_cond_gql_eval(struct policy_ctx *c, const struct policy_gql_cond *g, int all);
int policy_cond_git_eval(struct policy_ctx *c, const struct policy_git_cond *g, int all);
/* cond_mcp.c: the message the mcp: conditions judge, or NULL (c->cant set). */
const struct policy_mcp_msg *policy_ctx_mcp(struct policy_ctx *c);
/* mcp.method and mcp.tool of a rule against that message. */
int policy_cond_mcp_eval(struct policy_ctx *c, const struct policy_mcp_cond *m);

/* cond_json.c */
/* Parses the body once: 1, or -1 with c->cant set. */
int policy_json_body(struct policy_ctx *c);
/*
 * Calls <fn> on each value <path> selects in <root>: 0, -1 past POLICY_JSON_VALUES_MAX, or -2 when an object
 * on the path holds a key other than the step's that equals it under case folding (policy_json_key_ambiguous).
 * <memo> (may be NULL) keeps those answers for <root>'s tree across the conditions of one decision.
 */
int policy_json_select(const json_t *root, const struct policy_jpath *path, void (*fn)(void *, const json_t *), void *arg,
                       struct policy_fold_memo *memo);
/*
 * 1 if the object <obj> holds a key that is not <key>/<klen> byte for byte but equals it under Unicode simple
 * case folding (common/fold.h): Go's encoding/json and ASP.NET Core read such a key as <key> (the last one
 * wins), so which value an upstream reads cannot be told.  O(keys of <obj>).
 */
int policy_json_key_ambiguous(const json_t *obj, const char *key, size_t klen);
/* A jansson value as a struct policy_val (<inexact>: reals cannot be compared). */
void policy_json_val(const json_t *j, int inexact, struct policy_val *v);
/* Checks nesting depth and real-number precision of a JSON text: 0, or -1 when nested too deeply. */
int policy_json_prescan(const char *s, size_t n, int *inexact);

/* cond_graphql.c: every operation of one GraphQL document appended to <doc>: 0, or -1 (*err set). */
int policy_gql_parse(const char *q, size_t len, struct policy_gql_doc *doc, const char **err);

/* cond_git.c: the commands of a section into <cmds> (POLICY_GIT_COMMANDS_MAX, or NULL: counted only):
 * the section's length, -2 (need more) or -1 (malformed, *err set). */
long policy_git_parse(const char *buf, size_t len, struct policy_git_cmd *cmds, size_t *ncmds, const char **err);

/* screen.c: why <req> is refused on every host (method overrides, a body on GET/HEAD/OPTIONS, a _method form
 * field when <form_body>: the body is urlencoded and readable), or NULL. */
const char *policy_screen(const struct policy_host *host, const struct policy_request *req, int head_unknown,
                          int form_body);

/* Value tests (cond_eval.c). */
/* 1 when the body can be read as <ct> (CT_JSON, CT_FORM, CT_GIT): held whole (git: held), of that content
 * type, not encoded, or empty; else 0 with c->cant set. */
int policy_ctx_body_readable(struct policy_ctx *c, int ct);
/* <t> over the strings <v>[<n>], quantified as cond_eval does. */
int policy_test_strings(struct policy_ctx *c, const struct policy_test *t, const char *place, const char *name,
                 const struct policy_gql_field *v, size_t n, int all);
int policy_test_value(struct policy_ctx *c, const struct policy_test *t, const struct policy_val *v);
/* Describes what <t> asks for, for explanations. */
void policy_test_describe(const struct policy_test *t, char *buf, size_t cap);
/* Records a relevant field for a hold (when c->cap is set). */
void policy_ctx_capture(struct policy_ctx *c, const char *place, const char *name, const struct policy_val *v);

#endif
