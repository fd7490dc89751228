/*
 * policy/mcp_int.h - what the two readers of list results share inside
 * policy/: the jansson filter (mcp_list.c) and the byte scanner
 * (mcp_scan.c) decide each entry with the same function.
 */
#ifndef SLUICE_POLICY_MCP_INT_H
#define SLUICE_POLICY_MCP_INT_H

#include "policy/mcp.h"

/* The member of a result that holds <list>'s entries ("tools", "resources", "prompts"), NULL for another. */
const char *policy_mcp_list_key(enum policy_mcp_method list);
/* The member of an entry of <list> that names it: "uri" for resources, else "name". */
const char *policy_mcp_entry_field(enum policy_mcp_method list);
#define POLICY_MCP_VCACHE 256          /* names remembered by a visibility cache (direct-mapped) */
#define POLICY_MCP_VCACHE_NAME 64      /* bytes of a name it remembers; longer ones are judged each time */

/*
 * policy_mcp_visible's answers for one policy snapshot and host (the
 * glob walk over the rules costs more than reading the entry): caller
 * storage, zeroed; it forgets everything when asked about another
 * snapshot or host.
 */
struct policy_mcp_vcache {
	const struct policy *p;
	const struct policy_host *h;
	struct {
		unsigned char used, list, visible, len;
		char name[POLICY_MCP_VCACHE_NAME];
	} e[POLICY_MCP_VCACHE];
};

/*
 * 1 if an entry of <list> stays in the result: it is an object
 * (<is_object>), its field (policy_mcp_entry_field) is a string
 * <name>/<n> (NULL: absent or not a string), no other key of it folds to
 * the field (<ambiguous> 0), and policy_mcp_visible says so (through
 * <vc> when not NULL).
 */
int policy_mcp_entry_kept(const struct policy *p, const struct policy_host *h, enum policy_mcp_method list,
                          int is_object, const char *name, size_t n, int ambiguous, struct policy_mcp_vcache *vc);

#endif
