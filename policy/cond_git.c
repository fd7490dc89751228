/*
 * policy/cond_git.c - git pushes over smart HTTP: the command section at the
 * start of a git-receive-pack request body.
 *
 * The section is pkt-lines (four hex digits of length, then the payload):
 * optional "shallow <id>" lines, then one "<old-id> <new-id> <ref>" per ref
 * (the first followed by NUL and the capabilities), then a flush "0000".
 * The pack that follows is never read: the proxy holds only the section and
 * streams the rest.  An id of all zeros as the old id creates the ref, as
 * the new id deletes it.  Anything else is malformed and refused.
 *
 * Whether an update is a fast-forward or a force push cannot be told from
 * here: that needs the repository's history.
 */
#include <stdlib.h>
#include <string.h>

#include "common/sluice.h"
#include "cond_int.h"

#define PKT_MAX 65520 /* git's LARGE_PACKET_MAX */

static int
is_hex_lower(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int
all_zero(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] != '0')
			return 0;
	return 1;
}

/* git check-ref-format, for a full ref name under refs/. */
static int
ref_ok(const char *r, size_t n)
{
	size_t i;

	if (n < 6 || n > POLICY_GIT_REF_MAX || memcmp(r, "refs/", 5) != 0)
		return 0;
	if (r[n - 1] == '/' || r[n - 1] == '.' || (n >= 5 && memcmp(r + n - 5, ".lock", 5) == 0))
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)r[i];

		if (c <= 0x20 || c == 0x7f || strchr("~^:?*[\\", c) != NULL)
			return 0;
		if (i + 1 < n && ((c == '.' && r[i + 1] == '.') || (c == '/' && r[i + 1] == '/') ||
		                  (c == '@' && r[i + 1] == '{') || (c == '/' && r[i + 1] == '.')))
			return 0;
	}
	return 1;
}

long
policy_git_parse(const char *buf, size_t len, struct policy_git_cmd *cmds, size_t *ncmds, const char **err)
{
	size_t off = 0, idlen = 0;
	int first = 1;

	*ncmds = 0;
	for (;;) {
		const char *p, *sp1, *sp2, *end;
		long n = 0;
		int k;

		if (len - off < 4)
			return -2;
		for (k = 0; k < 4; k++) {
			int h = sluice_hexval((unsigned char)buf[off + k]);

			if (h < 0) {
				*err = "bad pkt-line length";
				return -1;
			}
			n = n * 16 + h;
		}
		if (n == 0)
			return (long)(off + 4);
		if (n < 5 || n > PKT_MAX) {
			*err = "bad pkt-line length";
			return -1;
		}
		if (len - off < (size_t)n)
			return -2;
		p = buf + off + 4;
		end = buf + off + n;
		off += (size_t)n;
		if (end[-1] == '\n')
			end--;
		if (first && end - p > 8 && memcmp(p, "shallow ", 8) == 0) {
			if ((end - p != 48 && end - p != 72) || !is_hex_lower(p + 8, (size_t)(end - p - 8))) {
				*err = "bad shallow line";
				return -1;
			}
			continue;
		}
		if (first) {
			const char *nul = memchr(p, '\0', (size_t)(end - p));

			if (nul != NULL)
				end = nul;
		}
		if (memchr(p, '\0', (size_t)(end - p)) != NULL) {
			*err = "NUL in a command";
			return -1;
		}
		sp1 = memchr(p, ' ', (size_t)(end - p));
		if (sp1 == NULL || (sp1 - p != 40 && sp1 - p != 64) || (idlen != 0 && (size_t)(sp1 - p) != idlen)) {
			*err = first && end - p > 9 && memcmp(p, "push-cert", 9) == 0 ? "signed pushes are not supported"
			                                                              : "bad command";
			return -1;
		}
		idlen = (size_t)(sp1 - p);
		sp2 = sp1 + 1 + idlen;
		if (sp2 >= end || *sp2 != ' ' || !is_hex_lower(p, idlen) || !is_hex_lower(sp1 + 1, idlen)) {
			*err = "bad command";
			return -1;
		}
		if (!ref_ok(sp2 + 1, (size_t)(end - sp2 - 1))) {
			*err = "bad ref name";
			return -1;
		}
		if (*ncmds >= POLICY_GIT_COMMANDS_MAX) {
			*err = "too many commands";
			return -1;
		}
		if (all_zero(p, idlen) && all_zero(sp1 + 1, idlen)) {
			*err = "bad command";
			return -1;
		}
		if (cmds != NULL) {
			cmds[*ncmds].ref = sp2 + 1;
			cmds[*ncmds].ref_len = (size_t)(end - sp2 - 1);
			cmds[*ncmds].kind = all_zero(p, idlen) ? POLICY_GIT_CREATE :
			                    all_zero(sp1 + 1, idlen) ? POLICY_GIT_DELETE : POLICY_GIT_UPDATE;
		}
		(*ncmds)++;
		first = 0;
	}
}

long
policy_git_section_len(const char *buf, size_t len)
{
	const char *err;
	size_t n;

	return policy_git_parse(buf, len, NULL, &n, &err);
}

static const char *
kind_name(unsigned k)
{
	return k == POLICY_GIT_CREATE ? "create" : k == POLICY_GIT_DELETE ? "delete" : "update";
}

static int
command_ok(const struct policy_git_cond *g, const struct policy_git_cmd *cmd)
{
	char ref[POLICY_GIT_REF_MAX + 2];
	size_t i;

	if ((g->ops != 0 && !(g->ops & cmd->kind)) || (g->deny & cmd->kind))
		return 0;
	if (g->nrefs == 0)
		return 1;
	ref[0] = '/';
	memcpy(ref + 1, cmd->ref, cmd->ref_len);
	for (i = 0; i < g->nrefs; i++)
		if (policy_glob_match(&g->refs[i], ref, cmd->ref_len + 1))
			return 1;
	return 0;
}

int
policy_cond_git_eval(struct policy_ctx *c, const struct policy_git_cond *g, int all)
{
	const char *err = "malformed";
	int r = all ? TV_T : TV_F;
	size_t i;
	long n;

	if (c->git_state == 0) {
		c->git_state = -1;
		if (!policy_ctx_body_readable(c, CT_GIT)) {
			err = c->cant;
		} else if ((c->git = try_malloc(POLICY_GIT_COMMANDS_MAX * sizeof(*c->git))) == NULL) {
			err = "out of memory";
		} else {
			n = policy_git_parse(c->req->body, c->req->body_len, c->git, &c->ngit, &err);
			if (n == -2)
				err = "the command section is incomplete";
			else if (n >= 0)
				c->git_state = 1;
		}
		c->cant = err;
	}
	if (c->git_state < 0) {
		policy_ctx_why(c, "git: cannot judge: %s", c->cant);
		return TV_U;
	}
	/* no command: git's "0000" probe before a large push; an allow rule lets it pass on */
	for (i = 0; i < c->ngit; i++) {
		int ok = command_ok(g, &c->git[i]);

		r = all ? policy_tv_and(r, ok ? TV_T : TV_F) : policy_tv_or(r, ok ? TV_T : TV_F);
		if (all && !ok)
			policy_ctx_why(c, "git: %s %.*s is not allowed", kind_name(c->git[i].kind), (int)c->git[i].ref_len,
			        c->git[i].ref);
		if (c->cap != NULL) {
			struct policy_val v = {.kind = V_STR, .s = c->git[i].ref, .len = c->git[i].ref_len};

			policy_ctx_capture(c, "git", kind_name(c->git[i].kind), &v);
		}
	}
	return r;
}

long
policy_git_refs(const char *buf, size_t len, const char **refs, size_t *ref_lens, size_t cap, size_t *n,
                const char **caps, size_t *caps_len)
{
	struct policy_git_cmd *cmds = try_malloc(POLICY_GIT_COMMANDS_MAX * sizeof(*cmds));
	const char *err, *nul;
	size_t ncmds, i, off;
	long sec;

	*n = 0;
	*caps = buf;
	*caps_len = 0;
	if (cmds == NULL)
		return -1;
	sec = policy_git_parse(buf, len, cmds, &ncmds, &err);
	if (sec > 0) {
		for (i = 0; i < ncmds && i < cap; i++) {
			refs[i] = cmds[i].ref;
			ref_lens[i] = cmds[i].ref_len;
		}
		*n = i;
		/* the capabilities follow the first command's NUL, to the end of its pkt-line (which parsed) */
		nul = ncmds > 0 ? cmds[0].ref + cmds[0].ref_len : NULL;
		for (off = 0; nul != NULL && off + 4 <= (size_t)sec;) {
			long pl = 0;
			int k;

			for (k = 0; k < 4; k++)
				pl = pl * 16 + sluice_hexval((unsigned char)buf[off + k]);
			if (pl == 0)
				break;
			if (nul < buf + off + pl) {
				const char *end = buf + off + pl;

				if (nul < end && *nul == '\0') {
					if (end[-1] == '\n')
						end--;
					*caps = nul + 1;
					*caps_len = end > nul + 1 ? (size_t)(end - nul - 1) : 0;
				}
				break;
			}
			off += (size_t)pl;
		}
	}
	free(cmds);
	return sec;
}
