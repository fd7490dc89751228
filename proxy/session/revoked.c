/*
 * proxy/session/revoked.c - the session's side of revocation (issue 17): a
 * connection whose secrets, sandboxes or registration were withdrawn ends
 * its use of them.  What is stale, and the records, are proxy/cred/revoke.c's;
 * ending connections and tunnels is the session's.
 */
#include <sys/queue.h>
#include "proxy/session/session.h"
#include "proxy/core/context.h"

void
revoke_conn(struct conn *c, const char *why)
{
	if (c->revoked != NULL || c->state == CONN_S_CLOSING || c->state == CONN_S_DEAD)
		return;
	switch (c->state) {
	case CONN_S_PEEK:
	case CONN_S_TLS_ACCEPT:
		return;  /* no request yet: its first one is judged afresh (revoke_request_start) */
	case CONN_S_H2:
		c->revoked = why;
		revoke_audit(c, "goaway", why);
		conn_ops(c)->revoke(c, why);
		return;
	case CONN_S_TUNNEL:
		if (c->req == NULL || c->req->cred->nuses == 0)
			return;  /* passthrough, or a WebSocket that carries no injected value */
		c->revoked = why;
		revoke_audit(c, "tunnel_closed", why);
		tunnel_end(c);
		return;
	case CONN_S_REQ_HEAD:
		c->revoked = why;
		if (!c->head_started && c->req == NULL) {
			revoke_audit(c, "closed", why);
			http_next_request(c, 0);
			return;
		}
		break;
	default:
		if (c->req == NULL)
			return;  /* a passthrough being dialled: no request, nothing injected */
		c->revoked = why;
		break;
	}
	/* busy: the request in flight ends the connection (Connection: close when its answer has not started) */
	if (c->req != NULL)
		c->req->client_keep_alive = 0;
	revoke_audit(c, "close_after_request", why);
}

void
revoke_sweep(struct worker *w)
{
	struct conn *c, *next;
	const char *why;

	for (c = LIST_FIRST(&w->conns); c != NULL; c = next) {
		next = LIST_NEXT(c, link);
		if ((why = revoke_why(c)) != NULL)
			revoke_conn(c, why);
	}
}
