/*
 * common/admin_client.h - the client side of the gateway's admin socket:
 * `sluice run` (registration, health), `sluice approvals`, `sluice sandboxes`
 * and the embedded gateway's checks all speak to it through these two calls.
 */
#ifndef SLUICE_COMMON_ADMIN_CLIENT_H
#define SLUICE_COMMON_ADMIN_CLIENT_H

#include <stddef.h>

#define ADMIN_CLIENT_REPLY_MAX 65536    /* an admin socket reply, head and body (admin_client_call) */
#define ADMIN_CLIENT_TIMEOUT_MS 5000    /* per connect, send and receive */

/*
 * One HTTP/1.1 request over the unix socket <sock>: <method> <path>, with
 * <body> as application/json when not NULL, Connection: close, bounded by
 * ADMIN_CLIENT_TIMEOUT_MS per step.  On a reply returns 0 with *<status> and the
 * body (NUL-terminated, truncated to <cap>) in <resp> (may be NULL).
 * Returns SLUICE_EIO (cannot connect or send: <err>), SLUICE_ETOOBIG (reply
 * over ADMIN_CLIENT_REPLY_MAX) or SLUICE_EPARSE (no HTTP status line).
 */
int admin_client_call(const char *sock, const char *method, const char *path, const char *body, int *status,
                      char *resp, size_t cap, char *err, size_t errcap);

/*
 * The same, with the reply bounded by <max> bytes (head and body) instead of
 * ADMIN_CLIENT_REPLY_MAX, and its body returned whole in *<resp> (NUL-terminated,
 * xmalloc'd: the caller frees it; NULL on error).
 */
int admin_client_request(const char *sock, const char *method, const char *path, const char *body, size_t max,
                         int *status, char **resp, char *err, size_t errcap);

#endif
