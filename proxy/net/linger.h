/*
 * proxy/net/linger.h - the one lingering close.
 *
 * Closing a socket whose peer is still sending (the rest of a refused head, a
 * request body we will not read) makes the kernel answer with a RST, which
 * can destroy our answer before the peer has read it.  So our side is shut
 * first (the FIN also ends close-delimited bodies), what arrives is read and
 * discarded, and the socket is closed on the peer's EOF, an error, or when
 * the time is up.
 */
#ifndef SLUICE_PROXY_NET_LINGER_H
#define SLUICE_PROXY_NET_LINGER_H

#include <event2/event.h>

/* Called once <fd> is closed (may be NULL). */
typedef void net_linger_done_fn(void *arg);

/*
 * Takes <fd> (nonblocking, our answer already handed to the kernel) and
 * closes it lingeringly within <ms> on <base>; <done>(<arg>) follows the
 * close.  Never fails: when no event can be set up, <fd> is closed at once
 * (and <done> called before the return).
 */
void net_linger(struct event_base *base, int fd, unsigned ms, net_linger_done_fn *done, void *arg);

#endif
