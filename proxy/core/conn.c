/* proxy/core/conn.c - facts of the connection record (conn.h) that every layer asks */
#include <stdio.h>
#include "common/netaddr.h"
#include "proxy/core/conn.h"
#include "proxy/core/context.h"

const char *
conn_peer_str(const struct conn *c, char *buf)
{
	return netaddr_format(&c->peer.sa, 0, buf, CONN_ADDR_STR);
}

const char *
conn_dest_str(const struct conn *c, char *buf)
{
	if (!c->has_dest)
		return NULL;
	return netaddr_format(&c->dest.sa, 1, buf, CONN_ADDR_STR);
}

const struct policy_limits *
conn_limits(struct conn *c)
{
	return &c->w->gw->cfg->limits;
}

const char *
conn_req_id(struct conn *c)
{
	struct req *r = c->req;

	if (r->audit_id[0] == '\0')
		snprintf(r->audit_id, sizeof(r->audit_id), "%llu-%lu", (unsigned long long)c->id,
		         (unsigned long)++c->nreq);
	return r->audit_id;
}
