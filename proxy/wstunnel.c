/*
 * proxy/wstunnel.c - an upgraded WebSocket connection, frame by frame
 * (not inspected yet: tunnel_pump moves its bytes).
 */
#include "proxy/proxy_int.h"

int
ws_tunnel_start(struct conn *c)
{
	(void)c;
	return 0;
}

void
ws_tunnel_pump(struct conn *c)
{
	(void)c;
}

void
ws_tunnel_free(struct req *r)
{
	(void)r;
}
