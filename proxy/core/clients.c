/*
 * proxy/core/clients.c - the per-client connection counts of the gateway
 * (limits.conns_per_client): one short lock per accept and close, shared by
 * every worker.  Here, beside the context it lives in, so that the session
 * (conn.c) takes and gives back a slot without calling the top of proxy/.
 */
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "common/sluice.h"
#include "proxy/core/context.h"

static unsigned
client_bucket(const uint8_t a[16])
{
	unsigned h = 2166136261u, i;

	for (i = 0; i < 16; i++)
		h = (h ^ a[i]) * 16777619u;
	return h % PROXY_CLIENT_SLOTS;
}

static void
client_key(const struct sockaddr *sa, uint8_t a[16])
{
	memset(a, 0, 16);
	if (sa->sa_family == AF_INET) {
		a[10] = a[11] = 0xff;
		memcpy(a + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

int
gateway_client_take(struct gateway *gw, const struct sockaddr *sa)
{
	uint8_t a[16];
	struct client_slot *s;
	unsigned b;
	int ret = 0;

	client_key(sa, a);
	b = client_bucket(a);
	pthread_mutex_lock(&gw->clients_mu);
	for (s = gw->clients[b]; s != NULL && memcmp(s->addr, a, 16) != 0; s = s->next)
		;
	if (s == NULL) {
		s = xcalloc(1, sizeof(*s));
		memcpy(s->addr, a, 16);
		s->next = gw->clients[b];
		gw->clients[b] = s;
	}
	if (s->count >= gw->cfg->limits.conns_per_client)
		ret = -1;
	else
		s->count++;
	pthread_mutex_unlock(&gw->clients_mu);
	return ret;
}

void
gateway_client_put(struct gateway *gw, const struct sockaddr *sa)
{
	uint8_t a[16];
	struct client_slot *s, **pp;
	unsigned b;

	client_key(sa, a);
	b = client_bucket(a);
	pthread_mutex_lock(&gw->clients_mu);
	for (pp = &gw->clients[b]; (s = *pp) != NULL; pp = &s->next) {
		if (memcmp(s->addr, a, 16) == 0) {
			if (--s->count == 0) {
				*pp = s->next;
				free(s);
			}
			break;
		}
	}
	pthread_mutex_unlock(&gw->clients_mu);
}
