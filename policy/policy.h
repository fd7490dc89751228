/*
 * policy/policy.h - sluice.yaml: the gateway configuration and the compiled,
 * immutable policy snapshot; connection and request decisions.
 *
 * Loading validates everything (unknown keys are errors; errors name
 * file:line:column and what was expected) and compiles rules once (PCRE2
 * regexes JIT-compiled at load).  Deciding does no I/O and takes no lock.
 * A snapshot is reference-counted: a connection holds a reference for its
 * whole life, and a reload swaps in a new one.
 */
#ifndef SLUICE_POLICY_POLICY_H
#define SLUICE_POLICY_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include "common/netaddr.h"

/* Named bounds and timeouts (limits: in sluice.yaml); defaults in parentheses. */
struct policy_limits {
	unsigned tls_handshake_ms;      /* tls_handshake (10s) */
	unsigned request_head_ms;       /* request_head (10s): first byte to end of head */
	unsigned idle_ms;               /* idle (60s): keep-alive wait for the next request */
	unsigned body_ms;               /* body (30s): no body bytes either way for this long */
	unsigned upstream_connect_ms;   /* upstream_connect (10s): resolve + TCP + TLS */
	unsigned drain_ms;              /* drain (10s): SIGTERM grace for open requests */
	unsigned conns_per_client;      /* conns_per_client (256) */
	unsigned header_count;          /* header_count (100) */
	unsigned header_bytes;          /* header_bytes (32768): request or status line plus headers */
	unsigned request_line_bytes;    /* request_line (8192) */
};

struct policy_resolve {
	char *name;   /* canonical host name */
	char *addr;   /* IP literal text */
};

#define POLICY_STATE_DIR_DEFAULT "/var/lib/sluice/state"  /* state.dir (or state_dir): when absent */

/* state.backend: where the counters of limits and budgets are kept (issue 22). */
enum policy_state_backend {
	POLICY_STATE_FILE = 0,   /* file (default): this gateway's memory and <state.dir>/counters */
	POLICY_STATE_REDIS = 1,  /* redis: shared by the gateways of a fleet (proxy/store/store.h) */
};

/* state.on_error: what a limit does while the store cannot be reached or is slower than its timeout. */
enum policy_state_on_error {
	POLICY_STATE_DENY = 0,   /* deny (default): 503 naming the store */
	POLICY_STATE_LOCAL = 1,  /* local: this gateway's own counters, each cap scaled by local_share */
};

/* state.redis: checked at load; the password is a source spec, its value is read when the store starts. */
struct policy_state_redis {
	char *url;                     /* as written; NULL when absent */
	char *host;                    /* redis://HOST:port/db (brackets of an IPv6 address dropped); NULL for unix: */
	unsigned port;                 /* redis://host:PORT (6379) */
	char *unix_path;               /* unix:PATH?db=N; NULL for redis:// */
	unsigned db;                   /* /DB or ?db=DB (0) */
	char *password;                /* a source spec, env:VAR or file:/path (never the value); NULL: no AUTH */
	unsigned timeout_ms;           /* timeout (50ms), 1ms..10s: per operation */
	char *key_prefix;              /* key_prefix ("sluice:"): printable, no blanks, at most 64 bytes */
};

/* The non-policy part of sluice.yaml: plain data, read once at start. */
struct policy_config {
	char *listen_transparent;      /* listen.transparent, NULL if absent */
	char *listen_proxy;            /* listen.proxy, NULL if absent */
	char *listen_admin;            /* listen.admin ("unix:/path"), NULL if absent */
	char *listen_dns;              /* listen.dns, NULL if absent (later issue) */
	struct netaddr_cidr *proxy_clients; /* listen.proxy_clients (default 127.0.0.0/8, ::1/128) */
	int http2;                     /* listen.http2 (true): offer h2 to clients */
	size_t nproxy_clients;
	char *user;                    /* user (nobody) */
	char *ca_dir;                  /* ca (required) */
	size_t leaf_cache;             /* leaf_cache (10000) */
	char *ca_bundle;               /* upstream.ca_bundle (NULL: system trust store) */
	struct netaddr_cidr *nat64_prefixes; /* upstream.nat64_prefixes: IPv6 prefixes of length 32..96 (RFC 6052) */
	size_t nnat64_prefixes;
	struct policy_resolve *resolve;/* upstream.resolve */
	size_t nresolve;
	char *audit_file;              /* audit.file (NULL: no audit log; the operator is warned) */
	int audit_log_query;           /* audit.log_query (false): keep query strings in path */
	char *audit_key_file;          /* audit.key_file (NULL: records carry no mac) */
	unsigned audit_fsync_ms;       /* audit.fsync (1s); 0 is `fsync: record`, after every write */
	unsigned audit_checkpoint_ms;  /* audit.checkpoint_interval (10s) */
	char *audit_checkpoint_file;   /* audit.checkpoint_file (NULL: checkpoints go to syslog only) */
	uint64_t audit_rotate_size;    /* audit.rotate.size in bytes (0: never by size) */
	unsigned audit_rotate_ms;      /* audit.rotate.every (0: never by age) */
	int audit_syslog;              /* audit.syslog.enabled (false): every line also to syslog, RFC 5424 */
	char *audit_syslog_address;    /* audit.syslog.address: "local" (/dev/log), "unix:/p", "udp://h:p", "tcp://h:p" */
	char *audit_syslog_enterprise; /* audit.syslog.enterprise: the SD-ID's number (NULL: 32473) */
	char *audit_ocsf_file;         /* audit.ocsf.file: OCSF events, one a line (NULL: none) */
	unsigned audit_queue;          /* audit.queue (65536): records pending before the gateway fails closed */
	unsigned workers;              /* workers (0 = number of cores) */
	struct policy_limits limits;
	char *sandbox_backend;         /* sandbox.backend: "netns" (default), "qemu" or "firecracker" */
	unsigned sandbox_uid;          /* sandbox.uid (1000; never 0): what `sluice run` runs commands as */
	char *qemu_kernel;             /* sandbox.qemu.kernel: an absolute path, NULL if absent */
	char *qemu_initrd;             /* sandbox.qemu.initrd: an absolute path, NULL if absent */
	int qemu_kvm;                  /* sandbox.qemu.accel: 1 kvm, 0 tcg (default) */
	unsigned qemu_memory_mib;      /* sandbox.qemu.memory (256M) */
	char *state_dir;               /* state.dir, or its older name state_dir (both: an error) (/var/lib/sluice/state):
	                                * the counters of limits and budgets, <state_dir>/counters */
	enum policy_state_backend state_backend;  /* state.backend (file) */
	struct policy_state_redis redis;          /* state.redis (required with backend: redis) */
	char *gateway_id;              /* state.gateway_id (the host name, or "sluice" when it is not a valid id):
	                                * 1..64 of A-Z a-z 0-9 . _ - */
	unsigned fleet_size;           /* state.fleet_size (1): the number of gateways sharing the store */
	enum policy_state_on_error state_on_error;  /* state.on_error (deny) */
	uint32_t local_share;          /* state.local_share in millionths of a cap, 0 < x <= 1000000; 0 when absent:
	                                * 1/fleet_size */
	char *fleet_key;               /* state.fleet_key: a source spec (env:VAR or file:/path), never the value; NULL when
	                                * absent.  With backend: redis, the HMAC key the gateways seal approvals with */
	int reload_watch;              /* reload.watch (true): a change of the config file reloads it, as SIGHUP does */
};

struct policy;        /* the compiled snapshot, opaque */
struct policy_host;   /* one host entry of a snapshot, borrowed from it */

/*
 * Loads <path>.  On success returns 0 and sets *<cfg> (owned by the caller:
 * policy_config_free) and *<pol> (one reference owned by the caller).
 * Either out pointer may be NULL when not wanted.  On failure returns a
 * negative SLUICE_E* and writes "file:line:col: message" into <errbuf>.
 */
int policy_load_file(const char *path, struct policy_config **cfg, struct policy **pol,
                     char *errbuf, size_t errlen);

/* The same from a memory buffer; <name> is used in error messages. */
int policy_load_buffer(const char *name, const char *buf, size_t len, struct policy_config **cfg,
                       struct policy **pol, char *errbuf, size_t errlen);

/*
 * A policy whose lint finds an error (a secret bound to a host that has no
 * entry, so it could never be used) does not load: the loaders above fail
 * with SLUICE_EINVAL and the first such finding in <errbuf>, so neither the
 * gateway nor a reload runs it.  `sluice policy check` wants every finding
 * instead: with POLICY_LOAD_LINT_ERRORS_OK the policy loads and
 * policy_lint_errors counts them.
 */
#define POLICY_LOAD_LINT_ERRORS_OK 1u
int policy_load_file_flags(const char *path, unsigned flags, struct policy_config **cfg, struct policy **pol,
                           char *errbuf, size_t errlen);
int policy_load_buffer_flags(const char *name, const char *buf, size_t len, unsigned flags,
                             struct policy_config **cfg, struct policy **pol, char *errbuf, size_t errlen);

void policy_config_free(struct policy_config *cfg);
/*
 * The audit writer's settings (audit/writer.h, struct audit_opts) from
 * <cfg>'s audit.* keys: the strings are <cfg>'s, borrowed while <cfg> lives.
 * The writer knows no policy; this is where its keys are read.
 */
struct audit_opts;
void policy_audit_opts(const struct policy_config *cfg, struct audit_opts *out);

/* Reference counting (atomic). policy_unref frees at zero. NULL is fine. */
struct policy *policy_ref(struct policy *p);
void policy_unref(struct policy *p);

enum policy_verdict {
	POLICY_DENY = 0,
	POLICY_INTERCEPT = 1,
	POLICY_PASSTHROUGH = 2,
};

struct policy_conn_decision {
	enum policy_verdict verdict;
	const struct policy_host *host; /* the entry that matched, NULL if none */
	const char *rule;               /* static or snapshot-owned: e.g. "default", "api.github.com" */
	const char *reason;             /* static text for denials, NULL when not denied */
};

/*
 * Decides a connection to the canonical host <host> (common/host.h) on <port>.
 * Host lookup: an exact entry wins, then the longest matching "*.suffix"
 * wildcard (one or more labels), compared label by label.  IP literals only
 * match entries for that same literal.  A port not in the entry's ports
 * (default 443 and 80) is denied.  No entry: the top-level default decides.
 */
void policy_decide_conn(const struct policy *p, const char *host, unsigned port,
                        struct policy_conn_decision *out);

struct policy_req_decision {
	int allow;          /* 1 allow, 0 deny */
	const char *rule;   /* the rule's id ("id:" or "<host-key>/rules/<n>"), or "default" */
	const char *reason; /* static text, NULL when allowed */
};

/*
 * Decides one request on <host> (from policy_decide_conn, may be NULL: then
 * the default decides).  <path> is the normalised path (policy_path_normalise)
 * without the query.  The first matching rule wins; none: the default.
 * An entry without a rules list allows every request.
 */
void policy_decide_request(const struct policy *p, const struct policy_host *host,
                           const char *method, size_t method_len,
                           const char *path, size_t path_len,
                           struct policy_req_decision *out);

/* Host entry attributes. */
const char *policy_host_key(const struct policy_host *h);   /* as written in YAML, canonical */
int policy_host_allow_private(const struct policy_host *h);
int policy_host_keep_encoded_slashes(const struct policy_host *h); /* encoded_slashes: keep */

/*
 * path_params: what a host's entry does with ';' path parameters ("/a;jsessionid=x/b"), which Tomcat, Jetty and
 * Spring strip from each segment before routing (so "/public/..;/admin" is "/admin" to them).
 */
enum policy_path_params {
	POLICY_PATH_PARAMS_KEEP = 0,   /* forwarded as sent; allowed only if both the path and the path stripped are */
	POLICY_PATH_PARAMS_STRIP = 1,  /* the stripped path is judged and forwarded */
	POLICY_PATH_PARAMS_REFUSE = 2, /* any ';' in the path: 400 */
};
enum policy_path_params policy_host_path_params(const struct policy_host *h); /* NULL: keep */
/* get_bodies: allow on the host's entry (a body on GET, HEAD or OPTIONS is judged, not refused); NULL: 0. */
int policy_host_get_bodies(const struct policy_host *h);

/*
 * <in>/<len> (a normalised path) with every ';' parameter removed from each segment, and the empty segments
 * that leaves merged, into <out> (capacity <cap> >= len + 1): the output length.  "/a;x/;y/b;" is "/a/b".
 */
size_t policy_path_strip_params(const char *in, size_t len, char *out, size_t cap);

/*
 * The path the gateway judges and forwards for <in>/<len> on host entry <h> (may be NULL):
 * policy_path_normalise with the entry's encoded_slashes, then its path_params (refuse: any ';' is an error;
 * strip: the parameters are removed).  Same returns as policy_path_normalise.  The gateway and `sluice policy
 * test|explain` both call this.
 */
long policy_host_path(const struct policy_host *h, const char *in, size_t len, char *out, size_t cap,
                      const char **err);

/*
 * Normalises an origin-form path <in>/<len> (no query, no fragment) into <out>
 * (capacity <cap>, NUL-terminated; <cap> >= len + 1 always suffices).
 *  - bytes outside RFC 3986 pchar and '/' are refused (controls, space, '\\',
 *    '"', '<', '>', '^', '`', '{', '|', '}', '#', bytes >= 0x80);
 *  - %XX must be two hex digits; it is decoded when it encodes an unreserved
 *    character (ALPHA DIGIT - . _ ~), else kept with upper-case hex;
 *  - %00 is refused; %2F and %5C are refused unless <keep_slashes>, which keeps
 *    them encoded (rules then see them inside one segment);
 *  - repeated slashes are merged; "." and ".." segments are removed (RFC 3986
 *    5.2.4); a ".." that would climb above the root is refused;
 *  - a segment whose part before ';' is "." or ".." ("..;x", "%2e;") is refused:
 *    servers that strip path parameters read it as a dot segment.
 * Returns the output length (>= 1, starts with '/'), or -1 with *<err> set.
 */
long policy_path_normalise(const char *in, size_t len, int keep_slashes, char *out, size_t cap,
                           const char **err);

/* ---- secrets, sandboxes (issue 3) ---- */
enum policy_inject_kind {
	POLICY_INJECT_HEADER = 1,  /* header:<Name>: the value of that header (name kept lower-case in arg) */
	POLICY_INJECT_BASIC = 2,   /* basic: the user or password of an Authorization: Basic credential */
	POLICY_INJECT_QUERY = 3,   /* query:<param>: the value of that query parameter */
	POLICY_INJECT_JSON = 4,    /* json:$.a.b: a JSON body field (arg is the path as written) */
	POLICY_INJECT_FORM = 5,    /* form:<field>: an application/x-www-form-urlencoded body field */
};
struct policy_inject {
	enum policy_inject_kind kind;
	const char *arg;           /* NULL for basic */
};
struct policy_secret {
	const char *name;
	const char *source;        /* "env:..", "file:..", "exec:.." as written; validated with secret_source_parse */
	unsigned ttl_s;            /* ttl: (exec: sources only; 0 = none) */
	const char *format;        /* format: (NULL = none); validated with secret_format_known */
	const char *placeholder;   /* placeholder: as written, or NULL (the gateway derives one) */
	const char *const *hosts;  /* canonical host or "*.suffix", as host entries are written */
	size_t nhosts;
	const struct policy_inject *inject;  /* default when absent: one header:authorization */
	size_t ninject;
	const char *const *sandboxes;  /* sandboxes: names; nsandboxes 0 = every known sandbox */
	size_t nsandboxes;
};
struct policy_sandbox {
	const char *name;
	const struct netaddr_cidr *addrs;  /* addresses: CIDRs (may be 0) */
	size_t naddrs;
	const char *proxy_user;            /* proxy_auth.user, NULL if no proxy_auth */
	const char *proxy_password;        /* proxy_auth.password: a source spec ("env:..", "file:..") */
};
size_t policy_secret_count(const struct policy *p);
const struct policy_secret *policy_secret_get(const struct policy *p, size_t i);
/* The secret named <name>, or NULL. */
const struct policy_secret *policy_secret_find(const struct policy *p, const char *name);
/* The text of <k> ("header", "basic", "query", "json", "form"), "?" for no kind: the one table of place kinds. */
const char *policy_inject_kind_name(enum policy_inject_kind k);
/*
 * A place as text, at the edges (audit lines, error bodies, `sluice secrets`):
 * "<kind>:<arg>", or "<kind>" without an arg ("basic"), into <buf>/<cap>
 * (cut short if it must).  Returns <buf>.
 */
const char *policy_inject_format(const struct policy_inject *in, char *buf, size_t cap);
/* 1 if canonical <host> is one of <s>'s hosts (exact, or "*.suffix": one or more labels, as host entries match). */
int policy_secret_host_bound(const struct policy_secret *s, const char *host);
/* 1 if sandbox <name> may use <s> (nsandboxes 0: any non-NULL name); 0 for NULL <name>. */
int policy_secret_sandbox_allowed(const struct policy_secret *s, const char *name);
size_t policy_sandbox_count(const struct policy *p);
const struct policy_sandbox *policy_sandbox_get(const struct policy *p, size_t i);
/* The first sandbox whose addresses contain <sa> (IPv4, IPv6 or v4-mapped), or NULL. */
const struct policy_sandbox *policy_sandbox_by_addr(const struct policy *p, const struct sockaddr *sa);
/* The first sandbox with proxy_auth user <user>, or NULL. */
const struct policy_sandbox *policy_sandbox_by_proxy_user(const struct policy *p, const char *user, size_t len);
size_t policy_sandbox_env_count(const struct policy *p);
/* The i-th sandbox_env entry: the variable and the secret whose placeholder it gets. */
void policy_sandbox_env_get(const struct policy *p, size_t i, const char **var, const char **secret);
/* allow_plaintext: true on the host entry (secrets may be injected into plain HTTP toward it). */
int policy_host_allow_plaintext(const struct policy_host *h);

/*
 * ---- JSON paths and urlencoded forms (jsonpath.c): body places ----
 * A path is "$" then steps: .name, ['name'] (escapes \' and \\ only), [N], and
 * in patterns [*] (any index) and .* (any key).  A concrete path names one
 * location of a parsed body: built with policy_json_path_key/_index, which
 * spell every key one way (.name for [A-Za-z_][A-Za-z0-9_-]*, else ['..']).
 */
#define POLICY_JSON_PATH_MAX 256            /* bytes of a path in a policy */
#define POLICY_INJECT_ARG_MAX 128           /* bytes of a header, query or form name in a place */
/* 1 if <p> is a path with at least one step, at most POLICY_JSON_PATH_MAX bytes. */
int policy_json_path_ok(const char *p, size_t len);
/* 1 if the concrete <path> is matched by <pattern> (both NUL-terminated). */
int policy_json_path_match(const char *pattern, const char *path);
/* Appends a key or an index step to the concrete path in <buf> (length *len, kept NUL-terminated): 0, or -1
 * when it would not fit <cap> (or the key holds a control character): that location binds to nothing. */
int policy_json_path_key(char *buf, size_t cap, size_t *len, const char *key, size_t klen);
int policy_json_path_index(char *buf, size_t cap, size_t *len, size_t idx);
/* The fields of an application/x-www-form-urlencoded body, raw: "a=1&&b" gives (a,1) then (b,""). */
struct policy_form_iter {
	const char *p, *end;
};
/* The next field's raw name and value: 1, or 0 at the end. */
int policy_form_next(struct policy_form_iter *it, const char **name, size_t *nlen, const char **val, size_t *vlen);
/*
 * 1 if the urlencoded <s>/<len> (a query or a form body) has a _method field (name decoded, compared under
 * case folding) naming another method than <method>/<mlen> (case-insensitively), or one whose value does not
 * decode: Rack::MethodOverride, Laravel and Symfony run the request as that method.  Else 0.
 */
int policy_form_overrides_method(const char *method, size_t mlen, const char *s, size_t len);
/* Decodes a form component ('+' is a space, %XX a byte): the length, or -1 (a bad escape, or over <cap>). */
long policy_form_decode(const char *in, size_t len, char *out, size_t cap);

/*
 * ---- semantic rules (issue 6): what a request means ----
 *
 * A rule may carry conditions on the query, the headers and the body (json:,
 * form:, graphql:, git:), a verdict of allow, deny or hold, a mode, a rate
 * limit and a sum budget.  The proxy asks policy_body_need how much of the
 * body to hold, holds it (or refuses a larger one with 413), then calls
 * policy_decide.  Deciding does no I/O, takes no lock and touches nothing
 * shared but the immutable snapshot; it allocates only to parse a body a
 * candidate rule reads (jansson's tree for JSON, one decode buffer for forms
 * and queries, the GraphQL operation table), all freed before it returns.
 * Cost: host lookup as policy_decide_conn, then per rule one method compare
 * and one path match (glob: linear in the path; regex: PCRE2 JIT under the
 * snapshot's limits); the body is parsed at most once per request, when the
 * first rule that reads it is reached.  See bench/policy_bench.c.
 *
 * Conditions are judged with three outcomes: true, false, and "cannot
 * judge" (a body that does not parse or is not of the rule's content type,
 * duplicate JSON keys, nesting over POLICY_JSON_DEPTH_MAX, a regex over its
 * limits, a number outside what can be compared exactly, a body that was not
 * held).  An allow rule matches only when every condition is true; a deny or
 * hold rule matches unless some condition is false: what cannot be read is
 * never let through by either.
 */
enum policy_req_verdict {
	POLICY_REQ_DENY = 0,
	POLICY_REQ_ALLOW = 1,
	POLICY_REQ_HOLD = 2,
};

enum policy_mode {
	POLICY_MODE_ENFORCE = 0,
	POLICY_MODE_REPORT = 1,   /* evaluated and reported, never enforced */
	POLICY_MODE_OFF = 2,      /* skipped as if not written */
};

enum policy_scope {
	POLICY_SCOPE_SANDBOX = 0, /* one counter per sandbox (the proxy's notion of the client) */
	POLICY_SCOPE_GLOBAL = 1,  /* one counter for every client */
};

/*
 * limit: { rate: N/second|minute|hour|day, per: sandbox|global, name: shared }: a token bucket of N tokens
 * refilled over period_s.
 */
struct policy_limit {
	char *key;                /* the counter's name, stable across reloads: "rule:<id>", "limit:<name>" (name:, shared
	                           * by the rules that give it) or "secret:<name>"; a limit and a budget of one key are
	                           * two counters */
	uint32_t count;           /* N: bucket size, and tokens per period */
	uint32_t period_s;        /* 1, 60, 3600 or 86400 */
	enum policy_scope scope;  /* per: (default sandbox) */
};

/* Amounts (budgets) are integers in millionths: "12.5" is 12500000. */
#define POLICY_AMOUNT_SCALE 1000000
#define POLICY_AMOUNT_MAX   INT64_C(9000000000000000000) /* sums beyond this are not counted: the rule does not match */

/* budget: { sum: "form:amount" | "json:$.amount", max: NUMBER, per: day|hour, scope: sandbox|global, name: shared }. */
struct policy_budget {
	char *key;                /* "rule:<id>", or "budget:<name>" (name:, shared) */
	char *sum;                /* the place as written, e.g. "form:amount" */
	int64_t max;              /* in millionths */
	uint32_t period_s;        /* 3600 or 86400 (per:, default day) */
	enum policy_scope scope;  /* scope: (default global: a spending cap must not grow with the number of sandboxes) */
};

/* One request header as received (names compared case-insensitively). */
struct policy_header {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};

/* A request as the policy judges it; every pointer is borrowed for the call. */
struct policy_mcp_msg;
struct policy_request {
	const char *method;
	size_t method_len;
	const char *path;         /* normalised (policy_path_normalise), without the query */
	size_t path_len;
	const char *query;        /* raw query after '?', NULL when the target has none */
	size_t query_len;
	const struct policy_header *headers;
	size_t nheaders;
	const char *content_type; /* the Content-Type value, NULL when absent */
	size_t content_type_len;
	const char *body;         /* the held body, NULL when not held (rules that read it cannot judge) */
	size_t body_len;
	int body_complete;        /* 1: body is the whole body; 0: a prefix (enough for git: conditions only) */
	int has_body;             /* 1: the request carries a body (Content-Length above 0, or chunked), held or not */
	/* mcp: conditions judge this message (policy/mcp.h; one element of a batch) instead of reading the body;
	 * NULL: the body is read as one message (a batch cannot be judged whole) */
	const struct policy_mcp_msg *mcp_msg;
};

/* Flags of policy_body_need. */
#define POLICY_NEED_GIT_SECTION 1u /* only the git command section is read: hold until policy_git_section_len says so */

/*
 * How many body bytes the rules that could decide <req> (on <host>, as from
 * policy_decide_conn) read: 0 when none does (decide with body NULL), else
 * the largest max_body among them (a body larger than that is refused with
 * 413).  Rules are walked in order, skipping those whose method, path,
 * query or headers rule them out, and stopping at the first enforced rule
 * that matches without reading the body.  <req>'s body fields are ignored.
 * *<flags> (may be NULL) gets POLICY_NEED_GIT_SECTION when every such rule
 * reads only git: commands: the proxy then holds only the command section
 * (policy_git_section_len) and streams the pack after it.
 */
size_t policy_body_need(const struct policy *p, const struct policy_host *host, const struct policy_request *req,
                        unsigned *flags);

/* The outcome of one rule (or of the default). */
struct policy_outcome {
	enum policy_req_verdict verdict;
	const char *rule;                   /* rule id, host key, or "default"; snapshot-owned or static */
	const char *reason;                 /* static text, NULL when allowed */
	const struct policy_limit *limit;   /* the rule's limit:, NULL if none (snapshot-owned) */
	const struct policy_budget *budget; /* the rule's budget:, NULL if none */
	int64_t amount;                     /* budget != NULL: this request's sum, in millionths, >= 0 */
	unsigned hold_ms;                   /* POLICY_REQ_HOLD: the approval timeout */
};

#define POLICY_FIELDS_MAX 16       /* relevant fields kept for an approval */
#define POLICY_FIELDS_TEXT 4096    /* bytes for their places and values */
#define POLICY_FIELD_VALUE_MAX 256 /* bytes of one value shown (longer ones end in "...") */

/* One value a hold rule's conditions read: place "json:$.amount", "form:x", "header:x", "query:x", "graphql", "git". */
struct policy_field {
	const char *place;
	const char *value;  /* as found (JSON strings unquoted, numbers as written by %.17g, others as JSON);
	                     * secrets are NOT replaced here: the proxy shows placeholders */
};

struct policy_decision {
	/* What the gateway does. */
	struct policy_outcome act;
	/*
	 * POLICY_MODE_REPORT when act is an allow only because of report mode
	 * (the host is in report mode and no enforced rule decided); else
	 * POLICY_MODE_ENFORCE.
	 */
	enum policy_mode mode;
	/* 1 when a report-mode rule matched before the deciding one: report says what it would have done. */
	int reported;
	struct policy_outcome report;
	/* act.verdict == POLICY_REQ_HOLD: what the rule read, for the approver. */
	size_t nfields;
	struct policy_field fields[POLICY_FIELDS_MAX];
	char _text[POLICY_FIELDS_TEXT];
};

/*
 * Decides <req> on <host> (from policy_decide_conn; NULL: the default
 * decides).  Rules are tried in order: mode off is skipped; the first
 * matching report-mode rule is recorded in out->report and the walk goes on;
 * the first matching enforced rule decides.  None: the default decides,
 * except on a host in report mode, where the request passes (mode REPORT).
 * An entry without rules allows.  Never fails: anything it cannot judge is
 * handled as described above.  Fills *<out> entirely.
 */
void policy_decide(const struct policy *p, const struct policy_host *host, const struct policy_request *req,
                   struct policy_decision *out);

/* One step of an explanation: a rule considered, and why it matched or not. */
struct policy_explain_step {
	size_t index;                  /* position in the host's rules */
	const char *rule;              /* its id */
	enum policy_req_verdict verdict;
	enum policy_mode mode;         /* effective (rule's, else host's) */
	unsigned line, col;            /* where the rule is written */
	int result;                    /* 1 matched, 0 did not, -1 skipped (mode off), 2 matched but cannot judge (deny/hold) */
	const char *why;               /* what decided it, e.g. "json $.channel: \"C0EVIL\" is not in [C0BOTS]" */
};
typedef void (*policy_explain_fn)(void *arg, const struct policy_explain_step *step);

/*
 * policy_decide, calling <fn> for every rule it considers, in order.  Slower
 * (it formats text): for `sluice policy explain` and tests, not the hot path.
 */
void policy_explain(const struct policy *p, const struct policy_host *host, const struct policy_request *req,
                    struct policy_decision *out, policy_explain_fn fn, void *arg);

/* The mode of host entry <h> (mode:, default enforce). */
enum policy_mode policy_host_mode(const struct policy_host *h);

/* Text of a verdict and a mode: "allow", "deny", "hold"; "enforce", "report", "off". */
const char *policy_verdict_name(enum policy_req_verdict v);
const char *policy_mode_name(enum policy_mode m);

/*
 * The git receive-pack command section at the start of <buf>/<len>
 * (optional "shallow" lines, then "old new ref" pkt-lines, then a flush
 * "0000"): its length in bytes including the flush, -2 when more bytes are
 * needed, -1 when malformed (the request must be refused).  "0000" alone
 * (git's probe before a large push) is a section of 4 bytes with no command.
 */
long policy_git_section_len(const char *buf, size_t len);

/*
 * The refs the receive-pack command section at the start of <buf>/<len>
 * updates, for answering a refused push in git's own protocol: up to <cap>
 * of them in <refs>/<ref_lens> (views into <buf>), *<n> how many were stored,
 * and *<caps>, *<caps_len> the first command's capability list (length 0 when
 * none).  Returns what policy_git_section_len returns; on -1 or -2 nothing is
 * stored.
 */
long policy_git_refs(const char *buf, size_t len, const char **refs, size_t *ref_lens, size_t cap, size_t *n,
                     const char **caps, size_t *caps_len);

/* secrets.<name>.limit: the secret's rate limit, NULL if none (or no such secret). */
const struct policy_limit *policy_secret_limit(const struct policy *p, const char *name);

/*
 * Load-time findings that do not stop a policy from loading (`sluice policy
 * check` prints them; --strict makes them errors): "file:line:col: warning:
 * ..." strings owned by the snapshot.  policy_lint_errors counts the ones
 * `policy check` treats as errors even without --strict.
 */
size_t policy_warning_count(const struct policy *p);
const char *policy_warning_get(const struct policy *p, size_t i);
size_t policy_lint_errors(const struct policy *p);

#endif
