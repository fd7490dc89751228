/*
 * policy/policy_int.h - private types of the policy module: the compiled
 * snapshot, its host entries and rules, and the YAML loading helpers shared
 * by load.c, config.c and rules.c.  Nothing outside policy/ includes this.
 */
#ifndef SLUICE_POLICY_POLICY_INT_H
#define SLUICE_POLICY_POLICY_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/host.h"
#include "policy/policy.h"

/* Named bounds of the loader. */
#define POLICY_FILE_MAX (16u * 1024 * 1024) /* sluice.yaml size */
#define POLICY_YAML_DEPTH_MAX 32            /* nesting of YAML collections */
#define POLICY_WHERE_MAX 320                /* "hosts.<key>.rules[n].allow" context text */
#define POLICY_GLOB_TOKENS_MAX 255          /* glob tokens (literal bytes and stars) */
#define POLICY_GLOB_WORDS 4                 /* 64-bit words of state: tokens + 1 <= 256 */
#define POLICY_REGEX_MAX 4096               /* bytes of one regex: source */
#define POLICY_REGEX_MATCH_LIMIT 100000u    /* pcre2_set_match_limit */
#define POLICY_REGEX_DEPTH_LIMIT 10000u     /* pcre2_set_depth_limit */
#define POLICY_REGEX_HEAP_LIMIT 4096u       /* pcre2_set_heap_limit, KiB */
#define POLICY_METHOD_MAX 64                /* bytes of one method token */
#define POLICY_SECRETS_MAX 1024             /* entries in secrets: */
#define POLICY_SANDBOXES_MAX 4096           /* entries in sandboxes: */
#define POLICY_SANDBOX_ENV_MAX 1024         /* entries in sandbox_env: */
#define POLICY_SECRET_HOSTS_MAX 256         /* hosts: of one secret */
#define POLICY_SECRET_INJECT_MAX 32         /* inject: of one secret */
#define POLICY_SANDBOX_ADDRS_MAX 1024       /* addresses: of one sandbox */
#define POLICY_NAME_MAX 64                  /* bytes of a secret or sandbox name */
#define POLICY_PROXY_USER_MAX 128           /* bytes of a proxy_auth user */
#define POLICY_ENV_VAR_MAX 128              /* bytes of a sandbox_env variable name */
#define POLICY_PLACEHOLDER_MIN 16           /* bytes of a placeholder: as written */
#define POLICY_PLACEHOLDER_MAX 127
#define POLICY_TTL_MAX_S 86400u             /* ttl: at most 24h */

/*
 * A compiled path glob: a bit-parallel NFA (shift-and).  State i means "the
 * first i tokens matched"; a literal token advances on its byte, '*' loops on
 * any byte but '/', '**' loops on any byte.  Matching costs
 * O(path length * POLICY_GLOB_WORDS), whatever the glob.
 */
struct policy_glob {
	unsigned ntok;                        /* tokens; the accepting state is ntok */
	uint8_t cls[256];                     /* byte -> index into lit (0: no literal) */
	uint64_t (*lit)[POLICY_GLOB_WORDS];   /* per class: states whose token is that byte */
	size_t nlit;
	uint64_t star[POLICY_GLOB_WORDS];     /* states whose token is '*' or '**' */
	uint64_t dstar[POLICY_GLOB_WORDS];    /* states whose token is '**' */
};

enum policy_path_kind {
	POLICY_PATH_ANY = 0,
	POLICY_PATH_GLOB = 1,
	POLICY_PATH_REGEX = 2,
};

/* ---- semantic conditions (cond*.c) ---- */
#define POLICY_JSON_DEPTH_MAX 64            /* nesting of a JSON body a rule reads */
#define POLICY_MAX_BODY_DEFAULT (1u << 20)  /* max_body: default */
#define POLICY_MAX_BODY_MAX (16u << 20)     /* max_body: at most */
#define POLICY_HOLD_DEFAULT_MS 300000u      /* hold timeout: default 5m */
#define POLICY_HOLD_MAX_MS 86400000u        /* hold timeout: at most 24h */
#define POLICY_LIST_MAX 1024                /* entries of one in:/not_in:/refs: list */
#define POLICY_CONDS_MAX 64                 /* conditions of one rule */
#define POLICY_VALUE_MAX 4096               /* bytes of one value written in a condition */
#define POLICY_NAME_ARG_MAX 256             /* bytes of a header, query or form name in a condition */
#define POLICY_DEC_DIGITS 40                /* significant digits of a number compared exactly */
#define POLICY_DEC_EXP_MAX 4000             /* |exponent| of a number compared exactly */
#define POLICY_JSON_REAL_DIGITS 15          /* a JSON real with more significant digits cannot be compared */
#define POLICY_JSON_VALUES_MAX 4096         /* values one path may select in a body */
#define POLICY_JSON_BATCH_MAX 64            /* GraphQL requests in one batched (array) body */
#define POLICY_GIT_COMMANDS_MAX 4096        /* commands in one push */

/* A decimal number: 0.<d[0..nd)> x 10^exp, no leading or trailing zero digit; nd == 0 is zero. */
struct policy_dec {
	int neg;
	int exp;
	unsigned nd;
	char d[POLICY_DEC_DIGITS];
};

enum {
	POLICY_OP_EQ = 1u << 0,
	POLICY_OP_IN = 1u << 1,
	POLICY_OP_NOT_IN = 1u << 2,
	POLICY_OP_REGEX = 1u << 3,
	POLICY_OP_MIN = 1u << 4,
	POLICY_OP_MAX = 1u << 5,
	POLICY_OP_EXISTS = 1u << 6,
	POLICY_OP_ABSENT = 1u << 7,
};
#define POLICY_OP_VALUE (POLICY_OP_EQ | POLICY_OP_IN | POLICY_OP_NOT_IN | POLICY_OP_REGEX | POLICY_OP_MIN | POLICY_OP_MAX)

/* A literal of eq:/in:/not_in:; is_num when written as a plain YAML number. */
struct policy_lit {
	char *s;
	size_t len;
	int is_num;
	struct policy_dec num;
};

/* An operator map: { eq: .., in: [..], not_in: [..], regex: .., min: .., max: .., exists: .., absent: .. }. */
struct policy_test {
	unsigned ops;
	struct policy_lit eq;
	struct policy_lit *in;
	size_t nin;
	struct policy_lit *not_in;
	size_t nnot_in;
	pcre2_code *re;
	char *re_src;
	struct policy_dec min, max;
	char *min_src, *max_src;
};

enum policy_place {
	POLICY_PLACE_QUERY = 1,
	POLICY_PLACE_HEADER = 2,
	POLICY_PLACE_JSON = 3,
	POLICY_PLACE_FORM = 4,
	POLICY_PLACE_MCP_ARGS = 5,  /* mcp.arguments: JSON paths rooted at params.arguments (cond_mcp.c) */
};

enum policy_jstep_kind { POLICY_JSTEP_KEY = 1, POLICY_JSTEP_INDEX, POLICY_JSTEP_ANY_INDEX, POLICY_JSTEP_ANY_KEY };
struct policy_jstep {
	enum policy_jstep_kind kind;
	char *key;                  /* decoded, NUL-terminated (keys hold no NUL) */
	size_t klen;
	size_t idx;
};
struct policy_jpath {
	struct policy_jstep *steps;
	size_t n;
};

/* One condition on a named value: query:<name>, header:<name>, json:<path>, form:<name>. */
struct policy_cond {
	enum policy_place place;
	char *name;                 /* query/form: as written; header: lower case; json: the path as written */
	size_t name_len;
	struct policy_jpath path;   /* json */
	struct policy_test t;
};

enum { POLICY_GQL_QUERY = 1u, POLICY_GQL_MUTATION = 2u, POLICY_GQL_SUBSCRIPTION = 4u };
struct policy_gql_cond {
	unsigned types;             /* 0: any */
	int has_name, has_fields;
	struct policy_test name;    /* on each operation's name */
	struct policy_test fields;  /* on each root field name (aliases resolved) */
};

enum { POLICY_GIT_CREATE = 1u, POLICY_GIT_UPDATE = 2u, POLICY_GIT_DELETE = 4u };
struct policy_git_cond {
	struct policy_glob *refs;   /* "/" + glob, matched against "/" + ref */
	char **ref_src;
	size_t nrefs;               /* 0: any ref */
	unsigned ops;               /* ops: kinds a command may be (0: any) */
	unsigned deny;              /* deny: kinds a command may not be */
};

/*
 * mcp: of a rule (cond_mcp.c).  A tool entry is a name glob (strict name
 * bytes and '*': matched against tools/call and prompts/get params.name) or,
 * when it holds ':', a resource URI (matched against resources/read
 * params.uri: exactly, or as a prefix when it ends in '*').
 */
#define POLICY_MCP_TOOLS_MAX 1024          /* entries of one mcp.tool list */
struct policy_mcp_tool {
	char *src;                  /* as written */
	int uri;                    /* 1: a resource URI pattern */
	size_t prefix_len;          /* uri: bytes compared; a trailing '*' is not among them */
	int prefix;                 /* uri: ends in '*' */
	struct policy_glob glob;    /* name: "/" + the glob */
};
#define POLICY_MCP_AUDIT_MAX 16            /* paths of one mcp.audit list */
struct policy_mcp_cond {
	char **methods;             /* NULL/0: any method */
	size_t nmethods;
	struct policy_mcp_tool *tools;
	size_t ntools;              /* 0: any (or no) name */
	char **audit_src;           /* mcp.audit: JSON paths (rooted at params.arguments) recorded in clear */
	struct policy_jpath *audit;
	size_t naudit;
};

/* What of the body a rule reads. */
enum { POLICY_BODY_JSON = 1u, POLICY_BODY_FORM = 2u, POLICY_BODY_GQL = 4u, POLICY_BODY_GIT = 8u };

/*
 * A glob's shortcut, decided at load from its text: most globs are a literal
 * prefix (no '%', no star) followed by nothing, "**" or one "*", which a
 * prefix compare decides without running the automaton.
 */
enum policy_glob_fast {
	POLICY_GLOB_NFA = 0,        /* run the automaton (after the prefix compare) */
	POLICY_GLOB_EXACT = 1,      /* the whole glob is the literal prefix */
	POLICY_GLOB_PREFIX_ANY = 2, /* prefix then "**": any rest */
	POLICY_GLOB_PREFIX_SEG = 3, /* prefix then "*": a rest without '/' */
};

struct policy_rule {
	int allow;                  /* 1 allow, 0 deny or hold (kept for the path-only code) */
	enum policy_glob_fast fast;
	size_t prefix_len;          /* bytes of path_src that every matching path starts with */
	enum policy_req_verdict verdict;
	enum policy_mode mode;      /* effective: the rule's, else its host's */
	int has_mode;               /* mode: written on the rule */
	char **methods;             /* NULL/0: any method */
	size_t nmethods;
	enum policy_path_kind path_kind;
	char *path_src;             /* as written (glob normalised), NULL for any */
	struct policy_glob glob;
	pcre2_code *re;
	char *id;                   /* "id:" or "<host-key>/rules/<n>" */
	int id_written;             /* id: given */
	struct policy_cond *conds;  /* query:, headers:, json:, form: in that order */
	size_t nconds;
	size_t nhead_conds;         /* the first ones (query and headers): need no body */
	struct policy_gql_cond *gql;
	struct policy_git_cond *git;
	unsigned body;              /* POLICY_BODY_* read */
	size_t max_body;            /* bytes held for a rule that reads the body */
	struct policy_limit *limit;
	struct policy_budget *budget;
	struct policy_cond *sum;    /* budget.sum as a place (t unused) */
	struct policy_mcp_cond *mcp; /* mcp: (method, tool; arguments are conds of POLICY_PLACE_MCP_ARGS) */
	unsigned hold_ms;
	unsigned line, col;         /* of the rule item */
	char *where;                /* "hosts.<key>.rules[n]" for messages */
};

enum policy_host_kind {
	POLICY_HOST_EXACT = 1,      /* a canonical DNS name */
	POLICY_HOST_WILDCARD = 2,   /* "*.suffix": key is "*.suffix", suffix follows the "*." */
	POLICY_HOST_IP = 3,         /* a canonical IP literal */
};

struct policy_host {
	char *key;                  /* canonical key as written: "a.example", "*.example", "10.1.2.3" */
	enum policy_host_kind kind;
	enum policy_verdict verdict;
	unsigned *ports;
	size_t nports;
	int allow_private;
	int keep_slashes;
	int has_rules;              /* 0: no rules list, every request allowed */
	int allow_plaintext;        /* secrets may be injected into plain HTTP (issue 3) */
	enum policy_path_params path_params; /* path_params: (keep) */
	int get_bodies;             /* get_bodies: allow (1); refuse (0, the default) */
	char *mcp_endpoint;         /* mcp.endpoint: a normalised path; NULL: no mcp: entry */
	int mcp_error_code;         /* mcp.error_code: -32000..-32019 (-32001) */
	struct policy_rule *rules;
	size_t nrules;
	unsigned line, col;         /* of the key, for duplicate reports */
	enum policy_mode mode;      /* mode: (enforce) */
};

/* Open-addressing string table: slot holds host index + 1, 0 is empty. */
struct policy_htab {
	uint32_t *slots;
	size_t mask;                /* capacity - 1, capacity a power of two */
};

struct policy {
	atomic_ulong refs;
	int default_allow;
	struct policy_host *hosts;
	size_t nhosts;
	struct policy_htab exact;   /* exact names and IP literals, by key */
	struct policy_htab wild;    /* wildcards, by suffix (key + 2) */
	pcre2_match_context *mctx;  /* limits; read-only once built */
	/*
	 * secrets:, sandboxes: and sandbox_env: (secrets.c), in the order written.
	 * They point into this same allocation, after the struct (see
	 * policy_secrets_parse), so the snapshot's free() releases them.
	 */
	const struct policy_secret *secrets;
	size_t nsecrets;
	const struct policy_sandbox *sandboxes;
	size_t nsandboxes;
	const struct policy_env *env;
	size_t nenv;
	/* secrets.<name>.limit (load.c), by name */
	struct policy_slimit *slimits;
	size_t nslimits;
	/* lint.c: warnings and check-only errors, "file:line:col: warning: ..." */
	char **warnings;
	size_t nwarnings;
	size_t nlint_errors;
};

struct policy_slimit {
	char *name;
	struct policy_limit lim;
};

/* One sandbox_env entry. */
struct policy_env {
	const char *var;
	const char *secret;
};

/* Loader state for one document. */
struct policy_ld {
	const char *name;           /* file name for messages */
	yaml_document_t *doc;
	char *err;
	size_t errlen;
	unsigned flags;             /* POLICY_LOAD_* */
};

/* RFC 3986 characters a path may hold as they are (path.c; the glob compiler agrees with the normaliser). */
int policy_is_unreserved(unsigned c);
int policy_is_pchar(unsigned c);  /* unreserved, sub-delims, ':' and '@' */

/* Formats "name:line:col: message" for <node> into the error buffer; returns SLUICE_EINVAL. */
int policy_ld_error(struct policy_ld *l, const yaml_node_t *node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Same at an explicit 0-based mark. */
int policy_ld_error_at(struct policy_ld *l, yaml_mark_t mark, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Copies <len> bytes of YAML text into <out> (<cap>) escaped for a message. */
const char *policy_ld_esc(char *out, size_t cap, const yaml_char_t *s, size_t len);

yaml_node_t *policy_ld_node(struct policy_ld *l, int id);

/*
 * Checks that <map> is a mapping of scalar keys drawn from <keys> (<nkeys>),
 * without duplicates; fills <vals>[i] with the value of keys[i] or NULL and,
 * when <knodes> is not NULL, the key nodes.  <what> is the message for a
 * non-map ("a map of listen addresses").  Returns 0 or SLUICE_EINVAL.
 */
int policy_ld_fields(struct policy_ld *l, yaml_node_t *map, const char *where, const char *what,
                     const char *const *keys, size_t nkeys, yaml_node_t **vals, yaml_node_t **knodes);

/* Scalar readers: each returns 0 or SLUICE_EINVAL with a message naming <what>. */
int policy_ld_string(struct policy_ld *l, yaml_node_t *n, const char *what, char **out);
int policy_ld_bool(struct policy_ld *l, yaml_node_t *n, const char *what, int *out);
int policy_ld_uint(struct policy_ld *l, yaml_node_t *n, const char *what, unsigned long min,
                   unsigned long max, unsigned long *out);
/* 1 if <n> is a plain null scalar ("", "~", "null"), else 0. */
int policy_ld_is_null(const yaml_node_t *n);
/* A unit suffix and what it multiplies by; a table ends with a NULL suffix ("" is the bare number). */
struct policy_unit {
	const char *suffix;
	unsigned long mul;
};
/* A number with one of <units>' suffixes, scaled, at most <max>: 0 and *out, or -1. */
int policy_ld_scaled(const yaml_node_t *n, const struct policy_unit *units, unsigned long max, unsigned long *out);
/*
 * A host pattern as hosts: keys and secrets' hosts are written: a canonical
 * DNS name, "*." + one, or an IP literal, canonicalised into <canon>.
 * Returns POLICY_HOST_EXACT, _WILDCARD or _IP, or -1 (*err may say why).
 */
int policy_host_pattern(const char *s, size_t len, char canon[HOST_BUF + 2], const char **err);

/* config.c: the non-policy keys of the top-level map, by name. */
int policy_config_parse(struct policy_ld *l, yaml_node_t *root, struct policy_config *cfg);
/* config_state.c: state: (<state>) and the older state_dir (<state_dir>), either NULL when absent; both naming the
 * directory is an error.  Defaults set by policy_state_defaults (the gateway id is the host name), freed by
 * policy_state_free. */
int policy_state_parse(struct policy_ld *l, yaml_node_t *state, yaml_node_t *state_dir, struct policy_config *cfg);
void policy_state_defaults(struct policy_config *cfg);
void policy_state_free(struct policy_config *cfg);
/* <what> ("state.dir") at <n>: an absolute directory path without control characters, into cfg->state_dir. */
int policy_state_dir_parse(struct policy_ld *l, yaml_node_t *n, const char *what, struct policy_config *cfg);
/* 0 when <s>/<len> is a gateway id (1..64 of A-Z a-z 0-9 . _ -), else -1. */
int policy_gateway_id_ok(const char *s, size_t len);
void policy_config_defaults(struct policy_config *cfg);

/* rules.c: hosts: and default: into <p>. */
int policy_hosts_parse(struct policy_ld *l, yaml_node_t *hosts, struct policy *p);

/*
 * secrets.c: secrets:, sandboxes: and sandbox_env: (each node may be NULL when
 * absent) validated and packed behind *<pp>, which is reallocated (nothing may
 * point at the snapshot yet).  0 or SLUICE_EINVAL with the message set; on
 * failure *<pp> is unchanged.
 */
int policy_secrets_parse(struct policy_ld *l, yaml_node_t *secrets, yaml_node_t *sandboxes,
                         yaml_node_t *env, struct policy **pp);

/* match.c */
struct policy *policy_alloc(void);
int policy_index_build(struct policy_ld *l, struct policy *p);
/* The wildcard entry "*.<suffix>" (suffix <n> bytes), or NULL. */
const struct policy_host *policy_wild_find(const struct policy *p, const char *suffix, size_t n);
void policy_rule_dispose(struct policy_rule *r);
/* 1 match, 0 no match, -1 matching failed (limit hit or out of memory). */
int policy_regex_match(const struct policy *p, const pcre2_code *re, const char *s, size_t len);

/* cond.c: the condition keys of a rule body (query, headers, json, form, graphql, git, max_body, limit,
 * budget, timeout, mcp); <v> holds their nodes in that order, NULL when absent. */
#define POLICY_COND_KEYS 11
#define POLICY_COND_K_MCP 10  /* index of "mcp" in policy_cond_keys */
extern const char *const policy_cond_keys[POLICY_COND_KEYS];
int policy_cond_parse(struct policy_ld *l, yaml_node_t **v, const char *where, struct policy_rule *r);
/* A limit: map into <lim> (key set by the caller). */
int policy_limit_parse(struct policy_ld *l, yaml_node_t *n, const char *where, struct policy_limit *lim);
void policy_cond_dispose(struct policy_rule *r);
void policy_test_dispose(struct policy_test *t);
/* Parses a decimal ("-12.50", and "1.5e+20" when <exp>): 0, or -1 when it is not one or is too precise. */
int policy_dec_parse(const char *s, size_t n, int exp, struct policy_dec *out);
int policy_dec_cmp(const struct policy_dec *a, const struct policy_dec *b);
/* <d> in millionths: 0, or -1 (negative, more than 6 decimals, or too large). */
int policy_dec_amount(const struct policy_dec *d, int64_t *out);
/* Compiles a JSON path as policy_json_path_ok accepts it: 0 or -1. */
int policy_jpath_compile(const char *src, size_t len, struct policy_jpath *out);
void policy_jpath_dispose(struct policy_jpath *jp);

/* cond_mcp.c: the mcp: keys of a rule (method, tool) into r->mcp; *<args> gets the arguments: node (or NULL),
 * which the caller reads as conditions of POLICY_PLACE_MCP_ARGS. */
int policy_mcp_cond_parse(struct policy_ld *l, yaml_node_t *n, const char *where, struct policy_rule *r,
                          yaml_node_t **args);
void policy_mcp_cond_dispose(struct policy_mcp_cond *m);
/* 1 if the tool entry <t> matches <name>/<n> of a message of method <call> (POLICY_MCP_M_*, policy/mcp.h). */
int policy_mcp_tool_match(const struct policy_mcp_tool *t, int call, const char *name, size_t n);
/* 1 if <r>'s method list admits POST (or lists none). */
int policy_rule_posts(const struct policy_rule *r);
/* 1 if <s>/<n> holds no C0 control byte and no DEL (UTF-8 above 0x7f is fine): mcp.c. */
int policy_mcp_printable(const char *s, size_t n);
/* 1 if <method>/<n> is one of <m>'s methods (or <m> lists none). */
int policy_mcp_method_in(const struct policy_mcp_cond *m, const char *method, size_t n);
/* A host's mcp: map (endpoint, error_code) into <h>. */
int policy_mcp_host_parse(struct policy_ld *l, yaml_node_t *n, const char *where, struct policy_host *h);
/* A rule that reads MCP messages must be on a host with an mcp: endpoint, on a path that can be it. */
int policy_mcp_rule_check(struct policy_ld *l, const struct policy_host *h, const struct policy_rule *r);

/* lint.c: shadowed rules, overlapping wildcards, secrets bound to hosts without (allow) entries. */
void policy_lint(struct policy_ld *l, yaml_node_t *secrets, struct policy *p);

/* glob.c */
/* Compiles <src>/<len>; on failure returns -1 with *<err> set. */
int policy_glob_compile(struct policy_glob *g, const char *src, size_t len, const char **err);
int policy_glob_match(const struct policy_glob *g, const char *s, size_t len);
void policy_glob_dispose(struct policy_glob *g);

#endif
