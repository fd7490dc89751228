/*
 * proxy/cred/credreq.c - placeholders in a request head: find every one, allow
 * those in the places their secret is bound to (for a known client, toward a
 * bound host, over TLS), swap in the values there, and refuse the request
 * when one is anywhere else (an exfiltration attempt: 403, audited).
 *
 * A placeholder is not secret, so finding one in an unbound place proves no
 * leak; it is refused anyway because that is what an agent that was talked
 * into exfiltrating its token does, and the audit line is the alarm.
 */
#include <string.h>
#include <strings.h>
#include <openssl/evp.h>
#include <event2/buffer.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/cred/credhead.h"
#include "proxy/core/conn.h"
#include "proxy/core/refusal.h"
#include "proxy/core/body.h"
#include "proxy/net/net.h"
#include "proxy/cred/cred.h"
#include "proxy/core/context.h"
#include "proxy/core/h1_out.h"
#include "secrets/scrub.h"

#define BASIC_MAX CREDHEAD_BASIC_MAX   /* the longest Basic credential decoded and searched */

/*
 * The place <place> is bound to for <s>: what a use records (for a JSON
 * field, the pattern that matched: "json:$.items[*].token") and its kind in
 * *<kind>, or 0.
 */
static int
place_bound(const struct policy_secret *s, const char *place, char *use, size_t cap, enum policy_inject_kind *kind)
{
	size_t i;

	for (i = 0; i < s->ninject; i++) {
		const struct policy_inject *in = &s->inject[i];

		policy_inject_format(in, use, cap);
		if (in->kind == POLICY_INJECT_JSON ? strncmp(place, "json:", 5) == 0 && policy_json_path_match(in->arg, place + 5)
		                                   : strcmp(use, place) == 0) {
			*kind = in->kind;
			return 1;
		}
	}
	return 0;
}

int
cred_refuse(struct conn *c, const struct policy_secret *s, const char *place, const char *why, struct refusal *rf)
{
	struct req *r = c->req;
	char peer[CONN_ADDR_STR];

	snprintf(r->rule_buf, sizeof(r->rule_buf), "placeholder of secret '%s' in %s: %s", s->name, place, why);
	log_info("c%llu: %s exfiltration attempt refused: %s (%s)", (unsigned long long)c->id, conn_peer_str(c, peer),
	         r->rule_buf, c->host);
	r->cred->event = "exfiltration_attempt";
	r->cred->event_secret = s->name;
	snprintf(r->cred->event_place, sizeof(r->cred->event_place), "%s", place);
	return refusal_set(rf, 403, REFUSAL_EXFILTRATION, "secrets", r->rule_buf);
}

/*
 * Why <s>'s placeholder may not be used in <place> on this request, or NULL
 * (then <use> names the bound place it is in, as a use records it).
 */
static const char *
why_not(struct conn *c, const struct policy_secret *s, const char *place, char *use, size_t cap,
        enum policy_inject_kind *kind)
{
	if (c->sandbox == NULL)
		return "the client is not a known sandbox";
	if (!conn_may_use_secret(c, s))
		return "this sandbox may not use the secret";
	if (!policy_secret_host_bound(s, c->host))
		return "the host is not bound to the secret";
	if (!place_bound(s, place, use, cap, kind))
		return "the secret is not bound to this place";
	if (!c->tls && (c->entry == NULL || !policy_host_allow_plaintext(c->entry)))
		return "plain HTTP (the host entry has no allow_plaintext)";
	return NULL;
}

/*
 * Admits <s>'s placeholder in <place>: 0 (the use is recorded, its value
 * taken), or -1 with *why (refused: an exfiltration attempt), or -2 with the
 * reason in <buf> (the value is unavailable: 503).  Answers nothing.
 */
static int
admit(struct conn *c, const struct policy_secret *s, const struct cred_entry *e, const char *place, const char **why,
      char *buf, size_t cap)
{
	struct req *r = c->req;
	struct cred_value *v;
	char use[sizeof(r->cred->uses[0].place)];
	enum policy_inject_kind kind;
	size_t i;

	if ((*why = why_not(c, s, place, use, sizeof(use), &kind)) != NULL)
		return -1;
	for (i = 0; i < r->cred->nuses; i++)
		if (r->cred->uses[i].s == s && strcmp(r->cred->uses[i].place, use) == 0)
			return 0;
	if (r->cred->nuses == CRED_USES_MAX) {
		*why = "too many secrets in one request";
		return -1;
	}
	v = cred_value_take(c->w->gw->creds, e, buf, cap);
	if (v == NULL)
		return -2;
	r->cred->uses[r->cred->nuses].s = s;
	r->cred->uses[r->cred->nuses].e = e;
	r->cred->uses[r->cred->nuses].v = v;
	r->cred->uses[r->cred->nuses].kind = kind;
	snprintf(r->cred->uses[r->cred->nuses].place, sizeof(r->cred->uses[r->cred->nuses].place), "%s", use);
	r->cred->nuses++;
	return 0;
}

static int
refuse_unavailable(struct conn *c, const struct policy_secret *s, const char *why, struct refusal *rf)
{
	struct req *r = c->req;

	snprintf(r->rule_buf, sizeof(r->rule_buf), "secret '%s' is unavailable: %s", s->name, why);
	return refusal_set(rf, 503, REFUSAL_SECRET_UNAVAILABLE, "secrets", r->rule_buf);
}

int
cred_found(struct conn *c, const struct policy_secret *s, const struct cred_entry *e, const char *place,
           struct refusal *rf)
{
	const char *why = NULL;
	char buf[200];
	int ret = admit(c, s, e, place, &why, buf, sizeof(buf));

	if (ret == -1)
		return cred_refuse(c, s, place, why, rf);
	if (ret == -2)
		return refuse_unavailable(c, s, buf, rf);
	return 0;
}

int
cred_refuse_encoded(struct conn *c, const struct policy_secret *s, const char *place, struct refusal *rf)
{
	char use[sizeof(c->req->cred->uses[0].place)];
	enum policy_inject_kind kind;
	const char *why = why_not(c, s, place, use, sizeof(use), &kind);

	return cred_refuse(c, s, place,
	                   why != NULL ? why
	                               : "the placeholder is encoded here (percent, base64 or escapes) or cut in pieces: "
	                                 "only a placeholder written as it is is injected",
	                   rf);
}

/* ---- the head that leaves (credhead.c does the search; this is the binding) ---- */

struct judge {
	struct conn *c;
	const struct policy_secret **s;   /* by needle */
	const struct cred_entry **e;
	/* the first refusal, answered once the plan is done (the head it reads is the request's) */
	const struct policy_secret *refused;
	const char *why;
	int unavailable;
	char place[CREDHEAD_PLACE_NAME_MAX];
	char buf[200];
};

static int
judge_found(void *arg, size_t i, enum credhead_kind kind, const char *place, int encoded, size_t *sub)
{
	struct judge *j = arg;
	struct req *r = j->c->req;
	char use[sizeof(r->cred->uses[0].place)];
	enum policy_inject_kind ikind;
	size_t k;
	int ret;

	(void)kind;
	j->refused = j->s[i];
	snprintf(j->place, sizeof(j->place), "%s", place);
	if (encoded) {
		j->why = why_not(j->c, j->s[i], place, use, sizeof(use), &ikind);
		if (j->why == NULL)
			j->why = "the placeholder is encoded here (percent, base64 or escapes) or cut in pieces: only a "
			         "placeholder written as it is is injected";
		return -1;
	}
	ret = admit(j->c, j->s[i], j->e[i], place, &j->why, j->buf, sizeof(j->buf));
	if (ret != 0) {
		j->unavailable = ret == -2;
		return -1;
	}
	/* admitted: the use it is (header and query places are recorded as found) */
	for (k = 0; k < r->cred->nuses && !(r->cred->uses[k].s == j->s[i] && strcmp(r->cred->uses[k].place, place) == 0); k++)
		;
	if (k == r->cred->nuses)
		return -1;  /* cannot happen: admit recorded it */
	j->refused = NULL;
	*sub = k;
	return 0;
}

int
cred_check_head(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;
	const struct policy *p = c->pol;
	size_t n = policy_secret_count(p), i, k, m = 0, len;
	const char **ph = xcalloc(n + 1, sizeof(*ph));
	size_t *phlen = xcalloc(n + 1, sizeof(*phlen));
	struct judge j = {c, xcalloc(n + 1, sizeof(*j.s)), xcalloc(n + 1, sizeof(*j.e)), NULL, NULL, 0, "", ""};
	struct credhead_needles nd;
	struct credhead_plan plan;
	struct credhead_sub sub[CRED_USES_MAX];
	struct evbuffer *out = NULL;
	const char *head;
	int ret;

	for (i = 0; i < n; i++) {
		j.s[m] = policy_secret_get(p, i);
		if ((j.e[m] = cred_entry_of(c->w->gw->creds, j.s[m])) == NULL)
			continue;
		ph[m] = cred_placeholder(j.e[m]);
		phlen[m] = strlen(ph[m]);
		m++;
	}
	nd = (struct credhead_needles){ph, phlen, m};
	len = evbuffer_get_length(r->up_head);
	head = (const char *)evbuffer_pullup(r->up_head, -1);
	ret = credhead_plan(head, len, &nd, judge_found, &j, &plan);
	if (ret == 0 && r->cred->nuses > 0) {
		for (k = 0; k < r->cred->nuses; k++) {
			sub[k].ph = cred_placeholder(r->cred->uses[k].e);
			sub[k].phlen = strlen(sub[k].ph);
			sub[k].val = cred_value_bytes(r->cred->uses[k].v, &sub[k].vlen);
			sub[k].basic = r->cred->uses[k].kind == POLICY_INJECT_BASIC;
		}
		out = evbuffer_new();
		for (k = 0; k < r->cred->nuses && !sub[k].basic; k++)
			;
		ret = out == NULL ? SLUICE_ENOMEM
		                  : credhead_render(head, len, &plan, sub, r->cred->nuses, CREDHEAD_DROP_GRPC_ENCODING, out,
		                                    k < r->cred->nuses ? &r->cred->uses[k].basic : NULL,
		                                    k < r->cred->nuses ? &r->cred->uses[k].basic_ph : NULL);
		if (ret == 0) {
			evbuffer_drain(r->up_head, len);
			evbuffer_add_buffer(r->up_head, out);
		}
	}
	credhead_plan_free(&plan);
	if (out != NULL) {
		if ((len = evbuffer_get_length(out)) > 0)
			sluice_wipe(evbuffer_pullup(out, -1), len);
		evbuffer_free(out);
	}
	if (ret == -1 && j.refused != NULL && j.unavailable)
		refuse_unavailable(c, j.refused, j.buf, rf);
	else if (ret == -1 && j.refused != NULL)
		cred_refuse(c, j.refused, j.place, j.why, rf);
	else if (ret == SLUICE_EINVAL && j.refused == NULL && m > 0)
		cred_refuse(c, j.s[0], "head", "placeholders overlap, or the head does not split into places", rf);
	else if (ret != 0)
		refusal_set(rf, 500, REFUSAL_INTERNAL, "secrets", "cannot search the request head for placeholders");
	free(ph);
	free(phlen);
	free(j.s);
	free(j.e);
	return ret == 0 ? 0 : -1;
}

int
cred_client_auth(struct conn *c, const struct h1_message *m)
{
	const struct h1_header *h = h1_find_header(m, "proxy-authorization");
	uint8_t cred[BASIC_MAX];
	const char *sandbox = NULL;
	uint8_t *colon;
	int n, r = -1;

	size_t i;

	if (h == NULL)
		return 0;
	for (i = 0; i < policy_sandbox_count(c->pol) && policy_sandbox_get(c->pol, i)->proxy_user == NULL; i++)
		;
	if (i == policy_sandbox_count(c->pol))
		return 0;  /* no sandbox authenticates this way: the header means nothing here */
	n = credhead_basic_decode(h->value, h->value_len, cred, sizeof(cred));
	if (n > 0 && (colon = memchr(cred, ':', (size_t)n)) != NULL &&
	    cred_proxy_auth(c->w->gw->creds, c->pol, (const char *)cred, (size_t)(colon - cred), (const char *)colon + 1,
	                    (size_t)(cred + n - colon - 1), &sandbox) == 0) {
		c->sandbox = sandbox;
		r = 0;
	}
	sluice_wipe(cred, sizeof(cred));
	return r;
}

/*
 * A request body too large to hold is searched as it streams, in its decoded
 * views too (secrets/detect.h, ph_stream): bytes go upstream only once they
 * cannot be part of a placeholder in any view (the search holds back the raw
 * tail that could still begin one, or decode into the start of one).
 */
int
cred_scan_begin(struct conn *c)
{
	struct req *r = c->req;
	const struct cred_entry *e;
	const char *ph;
	size_t i;

	r->cred->scan = ph_stream_new();
	r->cred->scan_in = evbuffer_new();
	if (r->cred->scan == NULL || r->cred->scan_in == NULL)
		return -1;
	for (i = 0; i < policy_secret_count(c->pol); i++) {
		e = cred_entry_of(c->w->gw->creds, policy_secret_get(c->pol, i));
		if (e == NULL)
			continue;
		ph = cred_placeholder(e);
		if (ph_stream_add(r->cred->scan, ph, strlen(ph), i) != 0)
			return -1;
	}
	return 0;
}

int
cred_scan_pump(struct conn *c, struct evbuffer *uout, int end)
{
	struct req *r = c->req;
	const struct policy_secret *s;
	size_t len = evbuffer_get_length(r->cred->scan_in), n, id;
	struct evbuffer_ptr pos;
	uint8_t buf[4096];
	int hit = 0, in_trailers;

	/* search what arrived since the last round */
	while (r->cred->scan_fed < len && hit == 0) {
		n = len - r->cred->scan_fed < sizeof(buf) ? len - r->cred->scan_fed : sizeof(buf);
		if (evbuffer_ptr_set(r->cred->scan_in, &pos, r->cred->scan_fed, EVBUFFER_PTR_SET) != 0 ||
		    evbuffer_copyout_from(r->cred->scan_in, &pos, buf, n) != (ev_ssize_t)n)
			return -1;
		hit = ph_stream_feed(r->cred->scan, buf, n, &id);
		if (hit < 0)
			return -1;
		r->cred->scan_fed += n;
	}
	/* at the end the held-back bytes are decided (an escape cut off by the end passes as it is) */
	if (!hit && end && (hit = ph_stream_end(r->cred->scan, &id)) < 0)
		return -1;
	/* the trailers are searched at the end, before the last held-back bytes go */
	in_trailers = 0;
	if (!hit && end && (hit = in_trailers = cred_trailers_search(c, &id)) < 0)
		return -1;
	if (hit) {
		s = policy_secret_get(c->pol, id);
		if (in_trailers)
			snprintf(r->rule_buf, sizeof(r->rule_buf), "placeholder of secret '%s' in trailers: request trailers "
			         "are never injected into", s->name);
		else
			snprintf(r->rule_buf, sizeof(r->rule_buf), "placeholder of secret '%s' in body: a body too large to "
			         "hold (over %u bytes) is never injected into", s->name,
			         r->cred->hold_max > 0 ? (unsigned)r->cred->hold_max : (unsigned)CRED_BODY_HOLD_MAX);
		r->cred->event = "exfiltration_attempt";
		r->cred->event_secret = s->name;
		snprintf(r->cred->event_place, sizeof(r->cred->event_place), "%s", in_trailers ? "trailers" : "body");
		evbuffer_drain(r->cred->scan_in, len);  /* never sent */
		return 1;
	}
	/* what can no longer be part of a placeholder goes up; at the end, everything */
	n = end ? len : len - ph_stream_held(r->cred->scan);
	if (n > 0 && r->body == H1_BODY_CHUNKED)
		h1_out_chunk_size(uout, n);
	evbuffer_remove_buffer(r->cred->scan_in, uout, n);
	r->cred->scan_fed -= n;
	if (n > 0 && r->body == H1_BODY_CHUNKED)
		evbuffer_add(uout, SLUICE_LIT("\r\n"));
	if (end && r->body == H1_BODY_CHUNKED)
		evbuffer_add(uout, SLUICE_LIT("0\r\n\r\n"));
	return 0;
}

struct cred_req *
cred_req_new(void)
{
	return xcalloc(1, sizeof(struct cred_req));
}

void
cred_release(struct req *r)
{
	size_t i, n;

	/* the head sent upstream held values */
	if (r->up_head != NULL && (n = evbuffer_get_length(r->up_head)) > 0)
		sluice_wipe(evbuffer_pullup(r->up_head, -1), n);
	if (r->cred == NULL)
		return;
	cred_resp_free(r);
	ph_stream_free(r->cred->scan);
	if (r->cred->scan_in != NULL)
		evbuffer_free(r->cred->scan_in);
	r->cred->scan = NULL;
	r->cred->scan_in = NULL;
	for (i = 0; i < r->cred->nuses; i++) {
		cred_value_drop(r->cred->uses[i].v);
		secret_buf_free(r->cred->uses[i].basic);
		free(r->cred->uses[i].basic_ph);
	}
	free(r->cred);
	r->cred = NULL;
}
