/*
 * proxy/judge/semlimits.c - the limits of an allowed request (semantic.h:
 * sem_admit): each secret's rate limit, then the rule's, then its budget,
 * taken at relay_dial once nothing else can refuse the request; a refusal
 * is a 429 whose Retry-After and JSON body say which limit and when it
 * resets; a counter that cannot be kept is a 503 (fail closed).  A budget
 * taken is refunded (sem_budget_refund) if the request never went upstream.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <event2/buffer.h>
#include "common/clock.h"
#include "common/json.h"
#include "common/sluice.h"
#include "proxy/judge/limits.h"
#include "proxy/proxy_int.h"
#include "proxy/judge/semantic.h"
#include "proxy/judge/semantic_int.h"

static const char *
period_name(uint32_t s)
{
	return s == 1 ? "second" : s == 60 ? "minute" : s == 3600 ? "hour" : s == 86400 ? "day" : "period";
}

/* An amount in millionths as a decimal: "12.5", "200". */
static const char *
amount_fmt(int64_t v, char *buf, size_t cap)
{
	int64_t whole = v / POLICY_AMOUNT_SCALE, frac = v % POLICY_AMOUNT_SCALE;
	int n;

	if (frac < 0)
		frac = -frac;
	if (frac == 0) {
		snprintf(buf, cap, "%lld", (long long)whole);
		return buf;
	}
	n = snprintf(buf, cap, "%s%lld.%06lld", v < 0 && whole == 0 ? "-" : "", (long long)whole, (long long)frac);
	while (n > 0 && (size_t)n < cap && buf[n - 1] == '0')
		buf[--n] = '\0';
	return buf;
}

/* A 429: the limit <key> (<kind>) refused; Retry-After and a JSON body say which and when it resets. */
static int
refuse_limit(struct conn *c, const char *rule, const char *key, const char *kind, unsigned retry, uint64_t now,
             const char *what)
{
	struct req *r = c->req;
	struct sem_req *s = sem_req_of(r);
	struct evbuffer *out = cio_out(c);
	char body[2048];
	struct jbuf jb;
	time_t t = (time_t)(now / 1000u) + (time_t)retry;
	struct tm tm;
	long n;
	int keep = http_answer_keep(c, 429);

	if (retry == 0)
		retry = 1;
	s->limit_key = key;
	s->limit_kind = kind;
	s->retry_after = retry;
	if (gmtime_r(&t, &tm) == NULL || strftime(s->reset, sizeof(s->reset), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(s->reset, sizeof(s->reset), "?");
	snprintf(r->rule_buf, sizeof(r->rule_buf), "%s: resets in %u s (%s)", what, retry, s->reset);
	if (refuse_proto_answer(c, 429, "rate limited", rule, r->rule_buf, 1))
		return -1;  /* git, gRPC: in the client's protocol, the retry time in the reason */
	jb_init(&jb, body, sizeof(body));
	jb_str(&jb, "error", "rate limited");
	if (c->host[0] != '\0')
		jb_str(&jb, "host", c->host);
	jb_str(&jb, "rule", rule);
	jb_str(&jb, "reason", r->rule_buf);
	jb_str(&jb, "limit", key);
	jb_str(&jb, "kind", kind);
	jb_int(&jb, "retry_after", retry);
	jb_str(&jb, "reset", s->reset);
	n = jb_finish(&jb, 1);
	if (n < 0) {
		static const char fallback[] = "{\"error\":\"rate limited\"}\n";

		memcpy(body, fallback, sizeof(fallback));
		n = (long)sizeof(fallback) - 1;
	}
	evbuffer_add_printf(out,
	                    "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: %ld\r\n"
	                    "Retry-After: %u\r\nCache-Control: no-store\r\n%s\r\n",
	                    n, retry, keep ? "" : "Connection: close\r\n");
	evbuffer_add(out, body, (size_t)n);
	http_answer_end(c, 429, rule, r->rule_buf, 1, keep);
	return -1;
}

/* A limit that cannot be counted (limits.h: too many counters, state not saveable): 503, fail closed. */
static int
limits_failed(struct conn *c, const char *rule, int rc)
{
	c->req->client_keep_alive = 0;
	http_answer(c, 503, "limits unavailable", rule,
	            rc == SLUICE_ETOOBIG ? "too many rate limit and budget counters: refused (fail closed)"
	                                 : "the counters of limits and budgets cannot be saved (state_dir): refused "
	                                   "(fail closed)",
	            1);
	return -1;
}

/* One token of rate limit <lim> for the request (<rule> names it in a refusal): 0, or -1 answered (429, 503). */
static int
take_rate(struct conn *c, const struct policy_limit *lim, const char *rule, const char *sbx, uint64_t now)
{
	struct limits *l = c->w->gw->limits;
	char what[400];
	unsigned retry = 0;
	int rc = l != NULL ? limits_rate_take(l, lim, sbx, now, &retry) : SLUICE_EIO;

	if (rc < 0)
		return limits_failed(c, rule, rc);
	if (rc == 0)
		return 0;
	snprintf(what, sizeof(what), "rate limit %s (%u/%s, %s) is exhausted", lim->key, (unsigned)lim->count,
	         period_name(lim->period_s), lim->scope == POLICY_SCOPE_GLOBAL ? "global" : "per sandbox");
	return refuse_limit(c, rule, lim->key, "rate", retry, now, what);
}

int
sem_admit(struct conn *c)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	struct limits *l = c->w->gw->limits;
	const struct policy_limit *lim;
	char peer[CONN_ADDR_STR], what[400], a[32], m[32];
	const char *sbx = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer);
	uint64_t now = 0;
	unsigned retry = 0;
	size_t i, k;
	int rc;

	if (s != NULL && s->admitted)
		return 0;
	if (r->nuses == 0 && (s == NULL || (s->limit == NULL && s->budget == NULL)))
		return 0;
	/* each secret the request uses, once */
	for (i = 0; i < r->nuses; i++) {
		for (k = 0; k < i && r->uses[k].s != r->uses[i].s; k++)
			;
		if (k < i || (lim = policy_secret_limit(c->pol, r->uses[i].s->name)) == NULL)
			continue;
		if (now == 0)
			now = clock_wall_ms();
		if (take_rate(c, lim, lim->key, sbx, now) != 0)
			return -1;
	}
	s = sem_req_of(r);
	s->admitted = 1;
	if (now == 0)
		now = clock_wall_ms();
	if (s->limit != NULL && take_rate(c, s->limit, s->rule, sbx, now) != 0)
		return -1;
	if (s->budget != NULL) {
		rc = l != NULL ? limits_budget_take(l, s->budget, sbx, s->amount, now, &retry) : SLUICE_EIO;
		if (rc < 0)
			return limits_failed(c, s->rule, rc);
		if (rc > 0) {
			snprintf(what, sizeof(what), "budget %s (%s per %s, %s) would be exceeded by this request's %s",
			         s->budget->key, amount_fmt(s->budget->max, m, sizeof(m)),
			         period_name(s->budget->period_s),
			         s->budget->scope == POLICY_SCOPE_GLOBAL ? "global" : "per sandbox",
			         amount_fmt(s->amount, a, sizeof(a)));
			return refuse_limit(c, s->rule, s->budget->key, "budget", retry, now, what);
		}
		s->budget_taken = 1;
		amount_fmt(s->amount, s->amount_text, sizeof(s->amount_text));
	}
	return 0;
}

void
sem_budget_refund(struct conn *c)
{
	struct sem_req *s = c->req->sem;
	char peer[CONN_ADDR_STR];

	if (c->w->gw->limits != NULL)
		limits_budget_refund(c->w->gw->limits, s->budget, c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer),
		                     s->amount, clock_wall_ms());
}
