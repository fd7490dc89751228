/*
 * policy/screen.c - what is refused on every host, before any rule, because
 * common upstream frameworks read the request as another one than the rules
 * would judge (issue 19):
 *  - method overrides: X-HTTP-Method-Override, X-HTTP-Method,
 *    X-Method-Override (Google APIs, ASP.NET, Express method-override) and a
 *    _method query parameter (Rack::MethodOverride, Laravel, Symfony) that
 *    name another method than the request's own: a POST-only rule would
 *    admit what runs as a DELETE;
 *  - a _method form field naming another method, wherever the form body is
 *    held anyway (policy_body_need holds it on a POST where the override
 *    could matter: policy_screen_form_need);
 *  - a body on GET, HEAD or OPTIONS, unless the host's entry says
 *    get_bodies: allow: an upstream that ignores such a body reads it as the
 *    next, unjudged request (CL.0 desync).
 * The gateway and `sluice policy test|explain` reach these through
 * policy_decide and policy_explain, so both answer alike.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/fold.h"
#include "common/sluice.h"
#include "cond_int.h"

static const char *const override_headers[] = {"x-http-method-override", "x-http-method", "x-method-override"};
#define METHOD_FIELD "_method"
#define METHOD_VALUE_MAX 32   /* bytes of a decoded _method value compared with the request's method */

static void
trim(const char **s, size_t *n)
{
	while (*n > 0 && (**s == ' ' || **s == '\t'))
		(*s)++, (*n)--;
	while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* 1 if <v>/<n> names the method <m>/<mlen> (case-insensitively: Rack upper-cases the field). */
static int
own_method(const char *m, size_t mlen, const char *v, size_t n)
{
	return n == mlen && strncasecmp(v, m, n) == 0;
}

int
policy_form_overrides_method(const char *method, size_t mlen, const char *s, size_t len)
{
	struct policy_form_iter it;
	const char *name, *val;
	size_t nlen, vlen;
	char nb[sizeof(METHOD_FIELD) + 1], vb[METHOD_VALUE_MAX];
	long n, v;

	if (s == NULL)
		return 0;
	it.p = s;
	it.end = s + len;

	while (policy_form_next(&it, &name, &nlen, &val, &vlen)) {
		if (nlen > 3 * (sizeof(nb) - 1))
			continue;  /* too long to decode to "_method" */
		n = policy_form_decode(name, nlen, nb, sizeof(nb));
		if (n < 0)
			continue;  /* too long, or a bad escape: decoders that let it through keep it as written */
		if (!sluice_fold_eq(nb, (size_t)n, METHOD_FIELD, sizeof(METHOD_FIELD) - 1))
			continue;
		v = policy_form_decode(val, vlen, vb, sizeof(vb));
		if (v < 0)
			return 1;
		if (!own_method(method, mlen, vb, (size_t)v))
			return 1;
	}
	return 0;
}

static int
bodiless_method(const struct policy_request *req)
{
	return sluice_iov_ieq(req->method, req->method_len, "GET") ||
	       sluice_iov_ieq(req->method, req->method_len, "HEAD") ||
	       sluice_iov_ieq(req->method, req->method_len, "OPTIONS");
}

const char *
policy_screen(const struct policy_host *host, const struct policy_request *req, int head_unknown, int form_body)
{
	size_t i, k, n;
	const char *v;

	if (!head_unknown) {
		for (i = 0; i < req->nheaders; i++)
			for (k = 0; k < sizeof(override_headers) / sizeof(override_headers[0]); k++) {
				if (!sluice_iov_ieq(req->headers[i].name, req->headers[i].name_len, override_headers[k]))
					continue;
				v = req->headers[i].value;
				n = req->headers[i].value_len;
				trim(&v, &n);
				if (!own_method(req->method, req->method_len, v, n))
					return "a method-override header names another method than the request's";
			}
		if (req->query != NULL && policy_form_overrides_method(req->method, req->method_len, req->query, req->query_len))
			return "a _method query parameter names another method than the request's";
	}
	if (req->has_body && bodiless_method(req) && !policy_host_get_bodies(host))
		return "a body on GET, HEAD or OPTIONS (an upstream that ignores it would read it as another request; "
		       "get_bodies: allow on the host lets it through)";
	if (form_body && req->body != NULL && req->body_complete &&
	    policy_form_overrides_method(req->method, req->method_len, req->body, req->body_len))
		return "a _method form field names another method than the request's";
	return NULL;
}
