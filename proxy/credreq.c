/*
 * proxy/credreq.c - placeholders in a request head: find every one, allow
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
#include "proxy/proxy_int.h"
#include "secrets/scrub.h"

#define BASIC_MAX 4096   /* the longest Basic credential decoded and searched */

/* Decodes the credential of an "Authorization: Basic ..." value into <out>; its length, or -1. */
static int
basic_decode(const char *v, size_t len, uint8_t *out, size_t cap)
{
	int n;
	size_t pad = 0;

	if (len < 6 || strncasecmp(v, "Basic ", 6) != 0)
		return -1;
	v += 6;
	len -= 6;
	while (len > 0 && *v == ' ') {
		v++;
		len--;
	}
	if (len == 0 || len % 4 != 0 || len / 4 * 3 > cap)
		return -1;
	n = EVP_DecodeBlock(out, (const unsigned char *)v, (int)len);
	if (n < 0)
		return -1;
	if (v[len - 1] == '=')
		pad++;
	if (v[len - 2] == '=')
		pad++;
	return n - (int)pad;
}

/*
 * The place <place> is bound to for <s>: what a use records (for a JSON
 * field, the pattern that matched: "json:$.items[*].token"), or NULL.
 */
static int
place_bound(const struct policy_secret *s, const char *place, char *use, size_t cap)
{
	size_t i;

	for (i = 0; i < s->ninject; i++) {
		const struct policy_inject *in = &s->inject[i];
		switch (in->kind) {
		case POLICY_INJECT_HEADER:
			snprintf(use, cap, "header:%s", in->arg);
			break;
		case POLICY_INJECT_BASIC:
			snprintf(use, cap, "basic");
			break;
		case POLICY_INJECT_QUERY:
			snprintf(use, cap, "query:%s", in->arg);
			break;
		case POLICY_INJECT_FORM:
			snprintf(use, cap, "form:%s", in->arg);
			break;
		case POLICY_INJECT_JSON:
			snprintf(use, cap, "json:%s", in->arg);
			if (strncmp(place, "json:", 5) == 0 && policy_json_path_match(in->arg, place + 5))
				return 1;
			continue;
		}
		if (strcmp(use, place) == 0)
			return 1;
	}
	return 0;
}

/* Where in the request target the match at <off> is: "path" or "query:<param>". */
static void
target_place(const char *t, size_t len, size_t off, char *place, size_t cap)
{
	const char *q = memchr(t, '?', len);
	size_t k, eq;

	if (q == NULL || (size_t)(q - t) > off) {
		snprintf(place, cap, "path");
		return;
	}
	for (k = off; k > (size_t)(q - t) + 1 && t[k - 1] != '&'; k--)
		;
	for (eq = k; eq < off && t[eq] != '='; eq++)
		;
	snprintf(place, cap, "query:%.*s", (int)(eq < off ? eq - k : 0), t + k);
}

static const char *
find(const char *hay, size_t hlen, const char *needle, size_t nlen)
{
	return nlen == 0 ? NULL : memmem(hay, hlen, needle, nlen);
}

int
cred_refuse(struct conn *c, const struct policy_secret *s, const char *place, const char *why)
{
	struct req *r = c->req;
	char peer[CONN_ADDR_STR];

	snprintf(r->rule_buf, sizeof(r->rule_buf), "placeholder of secret '%s' in %s: %s", s->name, place, why);
	log_info("c%llu: %s exfiltration attempt refused: %s (%s)", (unsigned long long)c->id, conn_peer_str(c, peer),
	         r->rule_buf, c->host);
	r->event = "exfiltration_attempt";
	r->event_secret = s->name;
	snprintf(r->event_place, sizeof(r->event_place), "%s", place);
	http_answer(c, 403, "exfiltration attempt", "secrets", r->rule_buf, 1);
	return -1;
}

int
cred_found(struct conn *c, const struct policy_secret *s, const struct cred_entry *e, const char *place)
{
	struct req *r = c->req;
	struct cred_value *v;
	char why[200], use[sizeof(r->uses[0].place)];
	size_t i;

	if (c->sandbox == NULL)
		return cred_refuse(c, s, place, "the client is not a known sandbox");
	if (!conn_may_use_secret(c, s))
		return cred_refuse(c, s, place, "this sandbox may not use the secret");
	if (!policy_secret_host_bound(s, c->host))
		return cred_refuse(c, s, place, "the host is not bound to the secret");
	if (!place_bound(s, place, use, sizeof(use)))
		return cred_refuse(c, s, place, "the secret is not bound to this place");
	if (!c->tls && (c->entry == NULL || !policy_host_allow_plaintext(c->entry)))
		return cred_refuse(c, s, place, "plain HTTP (the host entry has no allow_plaintext)");
	for (i = 0; i < r->nuses; i++)
		if (r->uses[i].s == s && strcmp(r->uses[i].place, use) == 0)
			return 0;
	if (r->nuses == CRED_USES_MAX)
		return cred_refuse(c, s, place, "too many secrets in one request");
	v = cred_value_take(c->w->gw->creds, e, why, sizeof(why));
	if (v == NULL) {
		snprintf(r->rule_buf, sizeof(r->rule_buf), "secret '%s' is unavailable: %s", s->name, why);
		http_answer(c, 503, "secret unavailable", "secrets", r->rule_buf, 1);
		return -1;
	}
	r->uses[r->nuses].s = s;
	r->uses[r->nuses].e = e;
	r->uses[r->nuses].v = v;
	snprintf(r->uses[r->nuses].place, sizeof(r->uses[r->nuses].place), "%s", use);
	r->nuses++;
	return 0;
}

int
cred_check_head(struct conn *c, const struct h1_message *m)
{
	const struct policy *p = c->pol;
	const struct policy_secret *s;
	const struct cred_entry *e;
	uint8_t basic[BASIC_MAX];
	const char *ph, *hit;
	char place[96], lname[64];
	size_t i, j, k, plen, off;
	int bl;

	for (i = 0; i < policy_secret_count(p); i++) {
		s = policy_secret_get(p, i);
		e = cred_entry_of(c->w->gw->creds, s);
		if (e == NULL)
			continue;
		ph = cred_placeholder(e);
		plen = strlen(ph);
		for (off = 0; (hit = find(m->target + off, m->target_len - off, ph, plen)) != NULL;
		     off = (size_t)(hit - m->target) + plen) {
			target_place(m->target, m->target_len, (size_t)(hit - m->target), place, sizeof(place));
			if (cred_found(c, s, e, place) != 0)
				return -1;
		}
		for (j = 0; j < m->nheaders; j++) {
			const struct h1_header *h = &m->headers[j];
			if (sluice_iov_ieq(h->name, h->name_len, "proxy-authorization"))
				continue;  /* ours, never forwarded */
			for (k = 0; k < h->name_len && k < sizeof(lname) - 1; k++)
				lname[k] = (char)(h->name[k] >= 'A' && h->name[k] <= 'Z' ? h->name[k] + 32 : h->name[k]);
			lname[k] = '\0';
			if (find(h->value, h->value_len, ph, plen) != NULL) {
				snprintf(place, sizeof(place), "header:%s", lname);
				if (cred_found(c, s, e, place) != 0)
					return -1;
			}
			if (strcmp(lname, "authorization") == 0 &&
			    (bl = basic_decode(h->value, h->value_len, basic, sizeof(basic))) > 0 &&
			    find((const char *)basic, (size_t)bl, ph, plen) != NULL) {
				sluice_wipe(basic, sizeof(basic));
				if (cred_found(c, s, e, "basic") != 0)
					return -1;
			}
		}
	}
	sluice_wipe(basic, sizeof(basic));
	return 0;
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
	n = basic_decode(h->value, h->value_len, cred, sizeof(cred));
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
 * A request body too large to hold is searched as it streams: bytes go
 * upstream only once they cannot be part of a placeholder (the search holds
 * back the tail that could still begin one).
 */
int
cred_scan_begin(struct conn *c)
{
	struct req *r = c->req;
	const struct cred_entry *e;
	const char *ph;
	size_t i;

	r->scan = ph_search_new();
	r->scan_in = evbuffer_new();
	if (r->scan == NULL || r->scan_in == NULL)
		return -1;
	for (i = 0; i < policy_secret_count(c->pol); i++) {
		e = cred_entry_of(c->w->gw->creds, policy_secret_get(c->pol, i));
		if (e == NULL)
			continue;
		ph = cred_placeholder(e);
		if (ph_search_add(r->scan, ph, strlen(ph), i) != 0)
			return -1;
	}
	return 0;
}

int
cred_scan_pump(struct conn *c, struct evbuffer *uout, int end)
{
	struct req *r = c->req;
	const struct policy_secret *s;
	size_t len = evbuffer_get_length(r->scan_in), n, id;
	struct evbuffer_ptr pos;
	uint8_t buf[4096];
	int hit = 0;

	/* search what arrived since the last round */
	while (r->scan_fed < len && hit == 0) {
		n = len - r->scan_fed < sizeof(buf) ? len - r->scan_fed : sizeof(buf);
		if (evbuffer_ptr_set(r->scan_in, &pos, r->scan_fed, EVBUFFER_PTR_SET) != 0 ||
		    evbuffer_copyout_from(r->scan_in, &pos, buf, n) != (ev_ssize_t)n)
			return -1;
		hit = ph_search_feed(r->scan, buf, n, &id);
		if (hit < 0)
			return -1;
		r->scan_fed += n;
	}
	if (hit) {
		s = policy_secret_get(c->pol, id);
		snprintf(r->rule_buf, sizeof(r->rule_buf), "placeholder of secret '%s' in body: a body too large to hold "
		         "(over %u bytes) is never injected into", s->name,
		         r->hold_max > 0 ? (unsigned)r->hold_max : (unsigned)CRED_BODY_HOLD_MAX);
		r->event = "exfiltration_attempt";
		r->event_secret = s->name;
		snprintf(r->event_place, sizeof(r->event_place), "body");
		evbuffer_drain(r->scan_in, len);  /* never sent */
		return 1;
	}
	/* what can no longer be part of a placeholder goes up; at the end, everything */
	n = end ? len : len - ph_search_held(r->scan);
	if (n > 0 && r->body == H1_BODY_CHUNKED)
		evbuffer_add_printf(uout, "%zx\r\n", n);
	evbuffer_remove_buffer(r->scan_in, uout, n);
	r->scan_fed -= n;
	if (n > 0 && r->body == H1_BODY_CHUNKED)
		evbuffer_add(uout, "\r\n", 2);
	if (end && r->body == H1_BODY_CHUNKED)
		evbuffer_add(uout, "0\r\n\r\n", 5);
	return 0;
}

/* Appends <in> with every <from> replaced by <to>. */
static void
replace_all(struct evbuffer *out, const char *in, size_t len, const char *from, size_t flen, const uint8_t *to,
            size_t tlen)
{
	const char *hit;

	while ((hit = find(in, len, from, flen)) != NULL) {
		evbuffer_add(out, in, (size_t)(hit - in));
		evbuffer_add(out, to, tlen);
		len -= (size_t)(hit - in) + flen;
		in = hit + flen;
	}
	evbuffer_add(out, in, len);
}

/* Rewrites the Authorization: Basic line of <head> with <ph> swapped for <val> inside the credential. */
static void
swap_basic(struct evbuffer *head, const char *ph, const uint8_t *val, size_t vlen, struct cred_use *u)
{
	size_t len = evbuffer_get_length(head), n;
	char *h = (char *)evbuffer_pullup(head, -1), *line = h, *eol, *enc = NULL;
	uint8_t dec[BASIC_MAX];
	struct evbuffer *cred = evbuffer_new(), *out = evbuffer_new();
	int bl;

	for (; line < h + len; line = eol + 2) {
		eol = memmem(line, (size_t)(h + len - line), "\r\n", 2);
		if (eol == NULL)
			break;
		if ((size_t)(eol - line) > 15 && strncasecmp(line, "Authorization: ", 15) == 0 &&
		    (bl = basic_decode(line + 15, (size_t)(eol - line - 15), dec, sizeof(dec))) > 0) {
			replace_all(cred, (const char *)dec, (size_t)bl, ph, strlen(ph), val, vlen);
			free(u->basic_ph);
			u->basic_ph = xstrndup((const char *)dec, (size_t)bl);  /* as the client sent it: no value */
			sluice_wipe(dec, sizeof(dec));
			n = evbuffer_get_length(cred);
			enc = try_malloc(4 * ((n + 2) / 3) + 1);
			if (enc != NULL) {
				EVP_EncodeBlock((unsigned char *)enc, evbuffer_pullup(cred, -1), (int)n);
				/* the exact credential, for scrubbing its echo */
				u->basic = secret_buf_new(n);
				if (u->basic != NULL && n <= u->basic->cap) {
					memcpy(u->basic->p, evbuffer_pullup(cred, -1), n);
					u->basic->len = n;
				}
			}
			evbuffer_add(out, h, (size_t)(line - h));
			evbuffer_add_printf(out, "Authorization: Basic %s\r\n", enc != NULL ? enc : "");
			evbuffer_add(out, eol + 2, (size_t)(h + len - eol - 2));
			if (enc != NULL) {
				sluice_wipe(enc, strlen(enc));
				free(enc);
			}
			break;
		}
	}
	if (evbuffer_get_length(out) > 0) {
		evbuffer_drain(head, len);
		evbuffer_add_buffer(head, out);
	}
	/* evbuffer chains are not wiped by libevent: clear what held the value */
	n = evbuffer_get_length(cred);
	if (n > 0)
		sluice_wipe(evbuffer_pullup(cred, -1), n);
	evbuffer_free(cred);
	evbuffer_free(out);
}

void
cred_apply_head(struct conn *c)
{
	struct req *r = c->req;
	struct evbuffer *out;
	const uint8_t *val;
	const char *ph;
	size_t i, vlen, len;

	for (i = 0; i < r->nuses; i++) {
		ph = cred_placeholder(r->uses[i].e);
		val = cred_value_bytes(r->uses[i].v, &vlen);
		if (strcmp(r->uses[i].place, "basic") == 0) {
			swap_basic(r->up_head, ph, val, vlen, &r->uses[i]);
			continue;
		}
		len = evbuffer_get_length(r->up_head);
		out = evbuffer_new();
		replace_all(out, (const char *)evbuffer_pullup(r->up_head, -1), len, ph, strlen(ph), val, vlen);
		evbuffer_drain(r->up_head, len);
		evbuffer_add_buffer(r->up_head, out);
		evbuffer_free(out);
	}
}

void
cred_release(struct req *r)
{
	size_t i, n;

	cred_resp_free(r);
	ph_search_free(r->scan);
	if (r->scan_in != NULL)
		evbuffer_free(r->scan_in);
	r->scan = NULL;
	r->scan_in = NULL;
	for (i = 0; i < r->nuses; i++) {
		cred_value_drop(r->uses[i].v);
		secret_buf_free(r->uses[i].basic);
		free(r->uses[i].basic_ph);
	}
	r->nuses = 0;
	/* the head sent upstream held values */
	if (r->up_head != NULL && (n = evbuffer_get_length(r->up_head)) > 0)
		sluice_wipe(evbuffer_pullup(r->up_head, -1), n);
}
