/*
 * policy/secrets_match.c - the accessors of secrets:, sandboxes: and
 * sandbox_env: (policy/policy.h): which secret, bound to which hosts, usable
 * by which sandbox, and which sandbox a client is.  No I/O, no lock: the
 * snapshot is immutable.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/host.h"
#include "common/netaddr.h"
#include "common/sluice.h"
#include "policy_int.h"

size_t
policy_secret_count(const struct policy *p)
{
	return p != NULL ? p->nsecrets : 0;
}

const struct policy_secret *
policy_secret_get(const struct policy *p, size_t i)
{
	return p != NULL && i < p->nsecrets ? &p->secrets[i] : NULL;
}

const struct policy_secret *
policy_secret_find(const struct policy *p, const char *name)
{
	size_t i;

	if (p == NULL || name == NULL)
		return NULL;
	for (i = 0; i < p->nsecrets; i++)
		if (strcmp(p->secrets[i].name, name) == 0)
			return &p->secrets[i];
	return NULL;
}

/* 1 if the canonical <host> is an IP literal: IPv6 has ':', IPv4 an all-digit last label. */
static int
host_is_ip(const char *host, size_t n)
{
	size_t i = n;

	if (memchr(host, ':', n) != NULL)
		return 1;
	while (i > 0 && host[i - 1] != '.') {
		if (host[i - 1] < '0' || host[i - 1] > '9')
			return 0;
		i--;
	}
	return i < n;
}

static const char *const inject_kind_names[] = {
	[POLICY_INJECT_HEADER] = "header", [POLICY_INJECT_BASIC] = "basic", [POLICY_INJECT_QUERY] = "query",
	[POLICY_INJECT_JSON] = "json",     [POLICY_INJECT_FORM] = "form",
};

const char *
policy_inject_kind_name(enum policy_inject_kind k)
{
	if ((unsigned)k >= sizeof(inject_kind_names) / sizeof(inject_kind_names[0]) || inject_kind_names[k] == NULL)
		return "?";
	return inject_kind_names[k];
}

const char *
policy_inject_format(const struct policy_inject *in, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s%s", policy_inject_kind_name(in->kind), in->arg != NULL ? ":" : "",
	         in->arg != NULL ? in->arg : "");
	return buf;
}

int
policy_secret_host_bound(const struct policy_secret *s, const char *host)
{
	size_t i, hl;

	if (s == NULL || host == NULL)
		return 0;
	hl = strlen(host);
	for (i = 0; i < s->nhosts; i++) {
		const char *h = s->hosts[i];

		if (h[0] == '*' && h[1] == '.') {
			const char *suf = h + 2;
			size_t sl = strlen(suf);

			/* one or more labels before ".suffix"; IP literals never match a wildcard */
			if (hl > sl + 1 && host[hl - sl - 1] == '.' && memcmp(host + hl - sl, suf, sl) == 0 &&
			    !host_is_ip(host, hl))
				return 1;
		} else if (strcmp(h, host) == 0) {
			return 1;
		}
	}
	return 0;
}

int
policy_secret_sandbox_allowed(const struct policy_secret *s, const char *name)
{
	size_t i;

	if (s == NULL || name == NULL)
		return 0;
	if (s->nsandboxes == 0)
		return 1;
	for (i = 0; i < s->nsandboxes; i++)
		if (strcmp(s->sandboxes[i], name) == 0)
			return 1;
	return 0;
}

size_t
policy_sandbox_count(const struct policy *p)
{
	return p != NULL ? p->nsandboxes : 0;
}

const struct policy_sandbox *
policy_sandbox_get(const struct policy *p, size_t i)
{
	return p != NULL && i < p->nsandboxes ? &p->sandboxes[i] : NULL;
}

const struct policy_sandbox *
policy_sandbox_by_addr(const struct policy *p, const struct sockaddr *sa)
{
	size_t i;

	if (p == NULL || sa == NULL || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return NULL;
	for (i = 0; i < p->nsandboxes; i++)
		if (p->sandboxes[i].naddrs > 0 &&
		    netaddr_cidr_match(p->sandboxes[i].addrs, p->sandboxes[i].naddrs, sa))
			return &p->sandboxes[i];
	return NULL;
}

const struct policy_sandbox *
policy_sandbox_by_proxy_user(const struct policy *p, const char *user, size_t len)
{
	size_t i;

	if (p == NULL || user == NULL)
		return NULL;
	for (i = 0; i < p->nsandboxes; i++) {
		const char *u = p->sandboxes[i].proxy_user;

		if (u != NULL && strlen(u) == len && memcmp(u, user, len) == 0)
			return &p->sandboxes[i];
	}
	return NULL;
}

size_t
policy_sandbox_env_count(const struct policy *p)
{
	return p != NULL ? p->nenv : 0;
}

void
policy_sandbox_env_get(const struct policy *p, size_t i, const char **var, const char **secret)
{
	int ok = p != NULL && i < p->nenv;

	if (var != NULL)
		*var = ok ? p->env[i].var : NULL;
	if (secret != NULL)
		*secret = ok ? p->env[i].secret : NULL;
}

int
policy_host_allow_plaintext(const struct policy_host *h)
{
	return h != NULL && h->allow_plaintext;
}
