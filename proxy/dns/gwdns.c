/*
 * proxy/dns/gwdns.c - the gateway's side of the DNS responder (dns.h): its UDP
 * socket, the policy question it asks ("could this name be allowed?"), the
 * audit lines of its answers, and the check every transparent connection to
 * a synthetic address gets: the name the sandbox uses (SNI or Host) must be
 * the one the address stands for.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include "common/log.h"
#include "common/sluice.h"
#include "common/host.h"
#include "proxy/dns/dns.h"
#include "proxy/net/net.h"
#include "proxy/sbxreg.h"
#include "proxy/core/context.h"
#include "audit/writer.h"

int
gwdns_bind(struct gateway *gw, const char *spec, const char **err)
{
	struct netaddr_listen la;
	int fd, off = 0;

	if (netaddr_listen_parse(spec, &la) != 0 || la.family == AF_UNIX) {
		*err = "listen.dns must be ip:port or [v6]:port";
		return -1;
	}
	fd = socket(la.family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		*err = "listen.dns: socket";
		return -1;
	}
	if (la.family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));  /* [::] answers IPv4 sandboxes too */
	if (bind(fd, (struct sockaddr *)&la.ss, la.sslen) == -1) {
		*err = "listen.dns: cannot bind";
		close(fd);
		return -1;
	}
	gw->dns_fd = fd;
	return 0;
}

/* A name could be allowed when an entry (exact or wildcard) names it, whatever its ports, or the default allows. */
static int
allow(void *arg, const char *name)
{
	struct gateway *gw = arg;
	struct policy_conn_decision d;

	policy_decide_conn(gw->pol, name, 443, &d);
	return d.verdict != POLICY_DENY || d.host != NULL;
}

static void
audit(void *arg, const struct sockaddr *client, const char *name, int qtype, const char *answer)
{
	struct gateway *gw = arg;
	char peer[CONN_ADDR_STR], qt[16];
	const struct policy_sandbox *sb = policy_sandbox_by_addr(gw->pol, client);
	struct sbx_entry *e = sb == NULL ? sbxreg_by_addr(gw->sbx, client) : NULL;
	int denied = strcmp(answer, "NXDOMAIN") == 0 || strcmp(answer, "REFUSED") == 0 ||
	             strcmp(answer, "FORMERR") == 0;

	netaddr_format(client, 0, peer, sizeof(peer));
	snprintf(qt, sizeof(qt), "%s", qtype == 1 ? "A" : qtype == 28 ? "AAAA" : "");
	if (qt[0] == '\0')
		snprintf(qt, sizeof(qt), "TYPE%d", qtype);
	struct audit_rec r = {
		.kind = AUDIT_KIND_DNS,
		.sandbox = sb != NULL ? sb->name : e != NULL ? e->name : peer,
		.client = peer,
		.host = name,
		.dns_qtype = qt,
		.dns_answer = answer,
		.verdict = denied ? AUDIT_VERDICT_DENY : AUDIT_VERDICT_ALLOW,
		.status = -1,
		.upstream_tls = -1,
	};
	audit_write(gw->audit, &r);
	sbxreg_release(e);
}

void
gwdns_start(struct gateway *gw)
{
	if (gw->dns_fd == -1)
		return;
	gw->dns = dns_responder_new(gw->base, gw->dns_fd, gw->synth, allow, audit, gw);
	if (gw->dns == NULL) {
		log_warnx("cannot start the DNS responder on listen.dns: sandboxes get no answers");
		close(gw->dns_fd);
	}
	gw->dns_fd = -1;  /* the responder owns it now */
}

void
gwdns_stop(struct gateway *gw)
{
	if (gw->dns != NULL)
		dns_responder_free(gw->dns);
	gw->dns = NULL;
	if (gw->dns_fd != -1)
		close(gw->dns_fd);
	gw->dns_fd = -1;
}

int
gwdns_check(struct synth *synth, const struct sockaddr *dest, char *host, size_t cap, int have_name,
            const char **reason)
{
	char name[HOST_BUF];
	int r;

	if (dest == NULL || !synth_is_synthetic(dest))
		return 0;
	r = synth_lookup_addr(synth, dest, name, sizeof(name));
	if (r != 0) {
		*reason = "a synthetic address the DNS responder did not give out";
		return -1;
	}
	if (!have_name) {
		snprintf(host, cap, "%s", name);
		return 0;
	}
	if (strcmp(host, name) != 0) {
		*reason = "the name differs from the one its address was given for";
		return -1;
	}
	return 0;
}
