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
	struct policy_resolve *resolve;/* upstream.resolve */
	size_t nresolve;
	char *audit_file;              /* audit.file (NULL: no audit log; the operator is warned) */
	int audit_log_query;           /* audit.log_query (false): keep query strings in path */
	unsigned workers;              /* workers (0 = number of cores) */
	struct policy_limits limits;
	char *sandbox_backend;         /* sandbox.backend: "netns" (default), "qemu" or "firecracker" */
	unsigned sandbox_uid;          /* sandbox.uid (1000; never 0): what `sluice run` runs commands as */
	char *qemu_kernel;             /* sandbox.qemu.kernel: an absolute path, NULL if absent */
	char *qemu_initrd;             /* sandbox.qemu.initrd: an absolute path, NULL if absent */
	int qemu_kvm;                  /* sandbox.qemu.accel: 1 kvm, 0 tcg (default) */
	unsigned qemu_memory_mib;      /* sandbox.qemu.memory (256M) */
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

void policy_config_free(struct policy_config *cfg);

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
 * Normalises an origin-form path <in>/<len> (no query, no fragment) into <out>
 * (capacity <cap>, NUL-terminated; <cap> >= len + 1 always suffices).
 *  - bytes outside RFC 3986 pchar and '/' are refused (controls, space, '\\',
 *    '"', '<', '>', '^', '`', '{', '|', '}', '#', bytes >= 0x80);
 *  - %XX must be two hex digits; it is decoded when it encodes an unreserved
 *    character (ALPHA DIGIT - . _ ~), else kept with upper-case hex;
 *  - %00 is refused; %2F and %5C are refused unless <keep_slashes>, which keeps
 *    them encoded (rules then see them inside one segment);
 *  - repeated slashes are merged; "." and ".." segments are removed (RFC 3986
 *    5.2.4); a ".." that would climb above the root is refused.
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
/* Decodes a form component ('+' is a space, %XX a byte): the length, or -1 (a bad escape, or over <cap>). */
long policy_form_decode(const char *in, size_t len, char *out, size_t cap);

#endif
