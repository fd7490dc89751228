/*
 * sandbox-glue/nft.h - the nftables side of a sandbox: one table per sandbox
 * (`table inet <n->table>`), rendered as one `nft -f` script and applied
 * atomically, plus the pieces the launcher needs around it: removing the
 * table, finding tables a crashed run left behind, and reading the table's
 * `rejected` counter.
 *
 * What the rendered table does, for traffic arriving on <n->host_if> (IPv4
 * and IPv6 alike):
 *   - prerouting (nat): UDP 53 is redirected to :<dns_port>; TCP 53 is
 *     redirected to the host itself on port 53, where the input chain refuses
 *     it (a reject statement in prerouting needs a recent kernel; this works
 *     on any); every other TCP packet, whatever its destination, is
 *     redirected to :<transparent_port>;
 *   - input (filter): from the sandbox interface only TCP to
 *     <transparent_port> and UDP to <dns_port> from the sandbox's own
 *     addresses, established/related packets, and ICMPv6 neighbour discovery
 *     (solicit, advert, router solicit, hop limit 255) are accepted; a source
 *     address that is not the sandbox's is dropped, anything else is rejected
 *     (tcp reset for TCP, icmpx admin-prohibited for the rest).  Every packet
 *     refused there counts in the table's named counter `rejected`.  Other
 *     interfaces are left alone (accept);
 *   - forward (filter): everything in or out of the sandbox interface is
 *     dropped, so nothing routes around the gateway.
 * No other table is touched.
 *
 * Every string field used is validated before it reaches the script, so a
 * plan cannot inject nft syntax: names must match [a-z0-9_]+, addresses must
 * parse with inet_pton (and are re-printed from the parsed form).
 */
#ifndef SLUICE_SANDBOX_NFT_H
#define SLUICE_SANDBOX_NFT_H

#include <stddef.h>
#include <stdint.h>
#include "sandbox-glue/sandbox.h"

#define NFT_SCRIPT_MAX 4096   /* a buffer this size always holds nft_render's output */
#define NFT_ERR_MAX 256       /* a useful size for the <err> buffers below */
#define NFT_TABLE_NAME_MAX 32 /* names[] rows of nft_stale_tables, NUL included */
#define NFT_LIST_MAX 65536    /* bytes of `nft list ...` output nft_list_tables keeps */

/*
 * Renders the whole ruleset of sandbox <n> into <buf> (<cap> bytes) as one
 * `nft -f` script: `add table`, `delete table`, then the full definition, so
 * applying it again atomically replaces the previous table.  Returns the
 * length written (without the NUL), SLUICE_EINVAL for a field that is not
 * safe or sane (a name outside [a-z0-9_]+ or not NUL-terminated within its
 * array, an address inet_pton refuses, a zero port, transparent_port 53), or
 * SLUICE_ETOOBIG when <cap> is too small.  On any error <buf> holds the empty
 * string (when <cap> > 0), never a partial script.
 */
int nft_render(const struct sandbox_net *n, char *buf, size_t cap);

/*
 * Renders the script that removes sandbox <n>'s table: `add table` then
 * `delete table inet <n->table>`, so it succeeds whether or not the table
 * still exists (teardown after a crash, or twice).  Returns the length,
 * SLUICE_EINVAL for an unsafe table name, SLUICE_ETOOBIG; <buf> as above.
 */
int nft_render_delete(const struct sandbox_net *n, char *buf, size_t cap);

/*
 * Parses the output of `nft list tables` (NUL-terminated <list_output>) and
 * stores in <names> (at most <max> rows) the names of the tables of family
 * inet named sluice_<8 lower-case hex>, in order; *<n> gets the count.  Every
 * other line is ignored.  Returns 0, or SLUICE_ETOOBIG when there were more
 * than <max> (the first <max> are stored and *<n> = <max>).
 */
int nft_stale_tables(const char *list_output, char names[][NFT_TABLE_NAME_MAX], size_t max, size_t *n);

/*
 * Parses the output of `nft list counter inet <table> rejected` (NUL
 * terminated): the first `packets N bytes M` line.  Returns 0 with
 * *<packets> and *<bytes> set, or SLUICE_EPARSE.
 */
int nft_counter_parse(const char *list_output, uint64_t *packets, uint64_t *bytes);

/*
 * Runs `nft -f -` (nft_apply) or `nft -c -f -` (nft_check: parse and
 * validate against the kernel, change nothing) with <script> on stdin.  nft is
 * executed directly (no shell) from a fixed list of paths (/usr/sbin/nft,
 * /sbin/nft, /usr/bin/nft) with an empty environment.  Returns 0, or
 * SLUICE_EIO with the first line of nft's stderr (or why nft could not run)
 * in <err> (<errcap> bytes, NUL-terminated, control characters replaced).
 * Blocks until nft exits.  Both need CAP_NET_ADMIN.  They fork and wait for
 * their own child: a caller that reaps children it did not start (a SIGCHLD
 * handler calling waitpid(-1)) makes them fail.
 */
int nft_apply(const char *script, char *err, size_t errcap);
int nft_check(const char *script, char *err, size_t errcap);

/*
 * Runs `nft list tables` and stores its output, NUL-terminated, in <out>
 * (<cap> bytes).  Returns 0, SLUICE_EIO (as nft_apply), or SLUICE_ETOOBIG
 * when the output did not fit.
 */
int nft_list_tables(char *out, size_t cap, char *err, size_t errcap);

/*
 * Reads the `rejected` counter of table <table> (validated as above): 0 with
 * *<packets> and *<bytes> set, SLUICE_EINVAL, SLUICE_EIO (as nft_apply; also
 * when the table does not exist) or SLUICE_EPARSE.
 */
int nft_rejected_read(const char *table, uint64_t *packets, uint64_t *bytes, char *err, size_t errcap);

#endif
