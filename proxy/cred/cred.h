/*
 * proxy/cred/cred.h - secrets in the request path: the store of values
 * (cred.c, main thread; workers take references), the search for
 * placeholders and their injection in the head (credreq.c, credhead.h) and
 * in held bodies (credbody.c), the scrubbing of responses (credresp.c,
 * credscrub.c), and revocation of what open connections were given
 * (revoke.c).
 *
 * Ownership: a struct cred_value is a reference (cred_value_take ..
 * cred_value_drop); the request's injected values live in r->cred->uses[] and its
 * scrub state in r->cred->scrub*, r->cred->scan*, r->hold: all taken here and all
 * dropped and wiped by cred_release / cred_resp_free / cred_hold_free, which
 * the session calls when the request ends.
 */
#ifndef SLUICE_PROXY_CRED_H
#define SLUICE_PROXY_CRED_H

#include <stddef.h>
#include <stdint.h>
#include <event2/buffer.h>
#include "policy/policy.h"
#include "secrets/secrets.h"
#include "secrets/scrub.h"
#include "secrets/detect.h"
#include "proxy/net/net.h"
#include "proxy/sbxreg.h"

struct conn;
struct req;
struct refusal;   /* proxy/session/refusal.h: what a refused check returns (the session answers it) */
struct worker;
struct h1_message;
struct cred_store;
struct cred_entry;
struct cred_value;
struct scrub_set;
struct scrub_stream;
struct unzip;

/* ---- cred.c: the secret store (values fetched on the main thread, shared by the workers) ---- */

/* Loads (or creates) the placeholder key in <ca_dir>; NULL with *err. */
struct cred_store *cred_store_create(const char *ca_dir, const char **err);
/* Main thread: makes an entry (placeholder, value) for every secret of <pol> not seen before. */
void cred_store_sync(struct cred_store *st, const struct policy *pol);
/* Main thread: re-runs exec: sources whose ttl ran out. */
void cred_store_refresh(struct cred_store *st);
void cred_store_destroy(struct cred_store *st);
/* The entry for <s> (valid until cred_store_destroy), NULL if <s> was never synced. */
const struct cred_entry *cred_entry_of(struct cred_store *st, const struct policy_secret *s);
const char *cred_placeholder(const struct cred_entry *e);
/* A reference to <e>'s current value, or NULL with the reason in <why>. */
struct cred_value *cred_value_take(struct cred_store *st, const struct cred_entry *e, char *why, size_t cap);
void cred_value_drop(struct cred_value *v);
/*
 * The value <e>'s current one replaced (a reference, or NULL): never
 * injected, only scrubbed, since a rotated token may stay valid and be
 * echoed for a while.  It goes at the next change.
 */
struct cred_value *cred_prev_value_take(struct cred_store *st, const struct cred_entry *e);
const uint8_t *cred_value_bytes(const struct cred_value *v, size_t *len);
/* Changes whenever any entry's value does (a fetch, a refresh, a new entry): scrub sets built before are stale. */
unsigned cred_store_gen(struct cred_store *st);
/* An upstream answered 401 to <e>'s value: an exec: source is re-run at the next tick (cred_store_refresh). */
void cred_entry_rejected(const struct cred_entry *e);
/* Checks explicit-proxy credentials against the sandboxes' proxy_auth: 0 and *sandbox, or -1. */
int cred_proxy_auth(struct cred_store *st, const struct policy *p, const char *user, size_t ulen, const char *pw,
                    size_t pwlen, const char **sandbox);

#define CRED_USES_MAX 8   /* (secret, place) pairs injected into one request */

/* A secret one request injects: borrowed entry, a value reference, where, and the Basic credential built. */
struct cred_use {
	const struct policy_secret *s;
	const struct cred_entry *e;
	struct cred_value *v;
	enum policy_inject_kind kind;           /* the bound place's kind: code tests this, never the text */
	char place[POLICY_JSON_PATH_MAX + 16];  /* as bound, for the audit: "header:authorization", "json:$.a[*].b" */
	struct secret_buf *basic;   /* "user:value" as injected, for scrubbing its echo; NULL if none */
	char *basic_ph;             /* the same credential as the client sent it (with the placeholder) */
};

/*
 * What cred/ keeps for one request (r->cred): the secrets it uses, the
 * searches of its body, the scrubbers of its response, the exfiltration
 * attempt it made.  Allocated by cred_req_new() when the session creates the
 * request, freed (values dropped, buffers wiped) by cred_release(), which the
 * session calls once at the request's end.  Never NULL while the request lives.
 */
struct cred_req {
	int body_injectable;            /* a secret may be injected into this body (a json: or form: place bound here) */
	struct cred_use uses[CRED_USES_MAX];  /* credreq.c */
	size_t nuses;
	struct host_scrub *hscrub;      /* credscrub.c: the host's scrub set; NULL (no secret bound to the host): none */
	const struct scrub_set *scrub;  /* credresp.c: what the response is scrubbed with (hscrub's, or scrub_own) */
	struct scrub_set *scrub_own;    /* the host's set plus what only this request holds (its Basic credential) */
	struct scrub_stream *scrub_st;  /* the body's scrubber, NULL when the body is not scrubbed */
	struct unzip *unzip;            /* the body's Content-Encoding decoder, or NULL */
	struct evbuffer *scrub_in, *scrub_plain, *scrub_out;
	struct scrub_hits scrub_hits;   /* tag i: the value of policy secret i was scrubbed */
	int scrub_chunked;              /* the scrubbed body goes out chunked (else until close) */
	int scrub_whole;                /* a small body scrubbed whole: the head waits for it and its Content-Length */
	struct evbuffer *scrub_head;    /* that head, scrubbed, without its last CRLF */
	struct ph_stream *scan;         /* credreq.c: the request body is searched for placeholders as it streams */
	struct evbuffer *scan_in;       /* decoded body bytes: the first scan_fed were searched, the rest not yet */
	size_t scan_fed;
	int scan_done;                  /* the search was flushed at the body's end */
	const char *event;              /* "exfiltration_attempt" or NULL */
	const char *event_secret;
	char event_place[256];
	size_t hold_max;
	unsigned char body_type;        /* enum cred_body_type, from Content-Type */
	unsigned char expect_continue;  /* the client waits for a 100 before sending the body */
	unsigned char grpc;             /* credresp.c: a gRPC response, scrubbed message by message */
};
/* A zeroed struct cred_req for a new request (aborts on out of memory, as every allocation of the session). */
struct cred_req *cred_req_new(void);
/*
 * credreq.c: placeholders in the request head that leaves.  cred_check_head()
 * searches r->up_head as built (every place, in every decoded view:
 * credhead.c), takes the values of placeholders written in bound places
 * (r->cred->uses), rewrites r->up_head with each value only inside its place, and
 * refuses (403 or 503 in <rf>, returning -1) a placeholder anywhere else.
 * cred_release() drops the values and wipes the head.
 */
int cred_check_head(struct conn *c, struct refusal *rf);
/*
 * credresp.c: <head> is the response head as built for the client: scrubbed
 * into <cout>; when the response has a body, sets up its decoder and
 * scrubber.  0, -1 (out of memory) or -2 (an encoding that cannot be decoded).
 */
int cred_resp_head(struct conn *c, struct evbuffer *head, const struct h1_message *m, struct evbuffer *cout);
/*
 * 1 when response <m>'s body is held whole to be scrubbed and keeps a
 * Content-Length: an unencoded Content-Length body of at most
 * CRED_RESP_WHOLE_MAX bytes, not gRPC.  Clients that need a length (or an
 * HTTP/1.0 one that would lose keep-alive) get one for most API answers.
 */
#define CRED_RESP_WHOLE_MAX (64u << 10)
int cred_resp_holds(const struct h1_message *m);
/* Moves decoded body bytes (r->cred->scrub_in) through unzip and the scrubber to the client; <end> flushes. 0 or -1. */
int cred_resp_pump(struct conn *c, int end);
void cred_resp_free(struct req *r);
/* Bytes the relay may queue for the scrubber: a gRPC message is scrubbed whole, so up to one message. */
#define CRED_GRPC_MSG_MAX (4u << 20)    /* gRPC's default receive limit */
size_t cred_resp_queue_max(const struct req *r);
/*
 * The set c->req's response is scrubbed with (r->cred->scrub, set up on first use):
 * the host's (credscrub.c), copied and extended when the request injected
 * what the host's set lacks (the exact Basic credential, or a value newer
 * than the set).  NULL when the host has no bound secret, and on an error
 * (*err = 1: out of memory; the caller fails the response).  WebSocket
 * frames use it (wstunnel.c), borrowed from r.
 */
const struct scrub_set *cred_resp_set(struct conn *c, int *err);
/* Scrubs the head (an interim one too) built in <head> into <cout> with cred_resp_set(). 0 or -1. */
int cred_resp_scrub_head(struct conn *c, struct evbuffer *head, struct evbuffer *cout);

/*
 * credscrub.c: every response, interim response, trailer and WebSocket
 * message from a host that any secret is bound to is scrubbed with the
 * values of every secret bound to that host, whether or not its request
 * injected one (a value the service stored is read back by later requests).
 * Each worker keeps one set per (policy snapshot, host), tagged with the
 * policy's secret index, rebuilt when cred_store_gen() moves (a reload, an
 * exec: refresh on its ttl or after a 401, a new entry).
 *
 * cred_host_scrub() sets c->req->cred->hscrub for c->host under c->pol (NULL when
 * no secret is bound to it): 0, or -1 when the set cannot be built (the
 * caller refuses the request: a bound host's response is never relayed
 * unscrubbed).  The request holds a reference until cred_release().
 */
struct host_scrub;
int cred_host_scrub(struct conn *c);
/* The set of <h> (never NULL; may be empty when no bound secret has a value). */
const struct scrub_set *host_scrub_set(const struct host_scrub *h);
/* 1 when <v> is one of the values <h> was built from. */
int host_scrub_has_value(const struct host_scrub *h, const struct cred_value *v);
void host_scrub_drop(struct host_scrub *h);
/* Frees worker <w>'s cache (worker_join). */
void cred_scrub_cache_free(struct worker *w);
/*
 * Explicit proxy: a Proxy-Authorization header in <m> makes the client the
 * sandbox whose proxy_auth it matches.  0 (no header, or it matched), -1
 * (it matched none: the caller answers 407).
 */
int cred_client_auth(struct conn *c, const struct h1_message *m);
/* Sets up the streaming search of the request body (r->cred->scan_in collects decoded body bytes). 0 or -1. */
int cred_scan_begin(struct conn *c);
/*
 * Moves r->cred->scan_in through the search into <uout> (chunk-framed for a
 * chunked body; <end> also flushes and ends it).  0, 1 when a placeholder
 * was found (nothing of it was sent: the caller refuses the request), -1
 * out of memory.
 */
int cred_scan_pump(struct conn *c, struct evbuffer *uout, int end);
/*
 * One placeholder of <s> found at <place> ("header:x", "basic", "query:p",
 * "path", "json:$.a[0]", "form:f", "body", ...): allowed (its value taken into
 * r->cred->uses) or refused.  0, or -1 refused (<rf>: 403, or 503 when the value is
 * unavailable).
 */
int cred_found(struct conn *c, const struct policy_secret *s, const struct cred_entry *e, const char *place,
               struct refusal *rf);
/*
 * The request is an exfiltration attempt of <s> at <place>, because <why>: r->cred->event is set (its record is
 * written when the refusal is answered) and <rf> says 403; returns -1.
 */
int cred_refuse(struct conn *c, const struct policy_secret *s, const char *place, const char *why,
                struct refusal *rf);
/* <s>'s placeholder was found at <place> only in a decoded view (or cut up): refused as cred_refuse; returns -1. */
int cred_refuse_encoded(struct conn *c, const struct policy_secret *s, const char *place, struct refusal *rf);

/*
 * credbody.c: request bodies held whole and searched before dialling; JSON
 * and form fields injected.  cred_hold_begin() decides at the head (1: hold,
 * 0: stream through the search, -1: out of memory; <sem>: a semantic rule or
 * a hold reads the body, sem_holds_body(), so it is held whatever its size); the session holds the
 * body (proxy/session/hold.c) and, once it is whole or too large to hold,
 * asks cred_body_finish() or cred_body_stream() to make it ready to send.
 * Neither dials nor answers: the session does.
 */
enum cred_body_type { CRED_BODY_OTHER = 0, CRED_BODY_JSON = 1, CRED_BODY_FORM = 2 };
#define CRED_BODY_HOLD_MAX (PROXY_HIGH_WATER / 2)   /* bytes of a body held whole when nothing could be injected */
#define CRED_BODY_INJECT_MAX (1024 * 1024)          /* bytes of a JSON or form body a secret may be injected into */
int cred_hold_begin(struct conn *c, const struct h1_message *m, int sem);
/*
 * A request body with a Content-Encoding (other than identity) toward a host
 * a secret is bound to cannot be searched for placeholders: 415, audited.
 * 0, or -1 refused (<rf>).
 */
int cred_body_coding_check(struct conn *c, const struct h1_message *m, struct refusal *rf);
/* The trailers of a held or searched body (r->req_trailers): 1 and *<secret> when a placeholder is in them, 0, -1. */
int cred_trailers_search(struct conn *c, size_t *secret);
/*
 * The held body is whole (r->hold): searched, injected into, and appended to
 * r->up_head with its Content-Length (r->hold freed), ready for the dial: 0;
 * or -1 with <rf> filled (from as deep as the JSON walk; c->req untouched but
 * for r->cred->event and rule_buf).
 */
int cred_body_finish(struct conn *c, struct refusal *rf);
/*
 * The held start of a body goes first and the rest streams (too large to hold
 * whole, or a git push whose command section was decided on): r->up_head gets
 * the client's framing and the held bytes (through the placeholder search
 * when the policy has secrets), r->hold is freed.  0, or -1 with <rf>.
 */
int cred_body_stream(struct conn *c, struct refusal *rf);
/* The held body's limit for this request (r->cred->hold_max): past it, cred_body_stream. */
size_t cred_hold_max(const struct req *r);
void cred_hold_free(struct req *r);
void cred_release(struct req *r);

/*
 * ---- revoke.c: revocation reaches open connections (issue 17) ----
 * revoke_policies_differ(): main thread: 1 when the secrets or sandboxes of
 *   <a> and <b> differ (the reload then bumps gw->revoke_gen).
 * revoke_why(): worker thread: why <c> must end its use of its facts, as
 *   the worker sees them (its secrets-and-sandboxes generation is older than
 *   the worker's, or its registration was removed), NULL when it need not;
 *   the session's revoke_sweep() (proxy/session/session.h) acts on it.
 * revoke_request_start(): a new request on <c> (after req_new): 421 and
 *   close when <c> was revoked; adopts the worker's newer policy (identity,
 *   host verdict: 403 when now denied).  0 go on, -1 refused (<rf>).
 * revoke_stale(): why <c>'s facts are no longer current (any thread's view:
 *   the gateway's generation, the registration), NULL when they are.
 * revoke_send_check(): the injected request of <c> is about to leave: 0, or
 *   -1 refused instead (503 in <rf>) because revoke_stale().
 * revoke_audit(): the "revocation" record: <action> done to <c>, <why>.
 * conn_tenant(): the tenant <c>'s upstream connections belong to, into <buf>
 *   (UPSTREAM_TENANT_MAX bytes): its sandbox registration id, else its
 *   sandbox's name, else its address.  Returns <buf>.
 */
int revoke_policies_differ(const struct policy *a, const struct policy *b);
const char *revoke_why(const struct conn *c);
int revoke_request_start(struct conn *c, struct refusal *rf);
const char *revoke_stale(const struct conn *c);
int revoke_send_check(struct conn *c, struct refusal *rf);
void revoke_audit(struct conn *c, const char *action, const char *why);
const char *conn_tenant(const struct conn *c, char *buf);

/*
 * 1 if the client of <c> may use secret <s>: the secret's `sandboxes:` admit
 * the client's name, and a sandbox registered at run time named it (or
 * named none) when that registration is who the client is.
 */
static inline int
conn_may_use_secret(const struct conn *c, const struct policy_secret *s)
{
	if (!policy_secret_sandbox_allowed(s, c->sandbox))
		return 0;
	return c->sbx == NULL || c->sandbox != c->sbx->name || sbxreg_secret_allowed(c->sbx, s->name);
}

#endif
