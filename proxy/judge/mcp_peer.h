/*
 * proxy/judge/mcp_peer.h - the server-to-client MCP requests (sampling,
 * elicitation, roots/list, a server's ping) seen in the answers of an MCP
 * endpoint, so that the client's POSTed answer can be correlated with the
 * request it answers (issue 23).  A client may read the server's request on
 * one connection (its GET stream, a POST's SSE answer) and POST its answer on
 * another, so the table is the gateway's, shared by the workers.
 *
 * An entry is keyed by who may answer it: the client's identity (its
 * sandbox's name, as the limits key it; a client outside every sandbox: its
 * address), the upstream host, and the Mcp-Session-Id of the request whose
 * answer carried it ("" when none), digested with SHA-256 into
 * struct mcp_peer_key; plus the JSON-RPC id as compact JSON text.  One
 * sandbox can never take another's entry: the keys differ.
 *
 * Bounds (each fails closed: an entry that is not there refuses its answer):
 * an entry expires MCP_PEER_TTL_MS after it was seen; at most MCP_PEER_MAX
 * entries in the table and MCP_PEER_KEY_MAX per key, the oldest dropped
 * first when either is full.  A request seen twice (a replayed stream) is
 * kept once.
 *
 * The session's view (c->w->gw->mcp_peers, the key of c->req) is
 * proxy/judge/mcp_req.h's: mcp_req_peer_add, and the correlation of a
 * client-posted response in mcp_req_judge.
 *
 * Threads: every function is thread-safe; one mutex guards the table, held
 * for a hash lookup and a few copies (the digest is made before it is taken).
 */
#ifndef SLUICE_PROXY_JUDGE_MCP_PEER_H
#define SLUICE_PROXY_JUDGE_MCP_PEER_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "policy/mcp.h"

#define MCP_PEER_TTL_MS (10u * 60u * 1000u)  /* a server request is answerable this long after it was seen */
#define MCP_PEER_MAX 4096                    /* server requests remembered in the whole gateway */
#define MCP_PEER_KEY_MAX 32                  /* ... per (client, host, session) */
#define MCP_PEER_ID_TEXT_MAX (POLICY_MCP_ID_MAX * 6 + 3)  /* an id as compact JSON text, escaped and quoted */

struct mcp_peers;

struct mcp_peer_key {
	unsigned char d[32];                 /* SHA-256 of client \0 host \0 session */
};

/* A new empty table, or NULL out of memory. */
struct mcp_peers *mcp_peers_create(void);
void mcp_peers_destroy(struct mcp_peers *t);   /* NULL: nothing */

/* The key of (<client>, <host>, <session>/<slen>); <session> NULL: none ("").  0, or -1 (no digest: no key). */
int mcp_peer_key_make(struct mcp_peer_key *k, const char *client, const char *host, const char *session,
                       size_t slen);

/*
 * Remembers that a server request <method>/<mlen> with id <id> (compact JSON
 * text) was seen for <k> at <now_ms> (monotonic ms).  0, or -1 when it cannot
 * be kept (a method over POLICY_MCP_METHOD_MAX, an id over
 * MCP_PEER_ID_TEXT_MAX): its answer will be refused.
 */
int mcp_peers_add(struct mcp_peers *t, const struct mcp_peer_key *k, const char *method, size_t mlen,
                  const char *id, uint64_t now_ms);

/*
 * Takes the entry of <k> with id <id> that has not expired at <now_ms>: 1
 * with its method copied to <method>/<cap> (NUL-terminated, truncated to
 * fit; NULL: not copied) and the entry removed (each answered once), else 0.
 */
int mcp_peers_take(struct mcp_peers *t, const struct mcp_peer_key *k, const char *id, char *method, size_t cap,
                   uint64_t now_ms);

/* Entries held, expired ones included until they are dropped (for tests). */
size_t mcp_peers_count(struct mcp_peers *t);

#endif
