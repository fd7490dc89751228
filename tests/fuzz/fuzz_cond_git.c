/*
 * tests/fuzz/fuzz_cond_git.c - git receive-pack command sections: the
 * pkt-line parser directly (its length never exceeds the input, it never
 * asks for more once it has answered), and through git: rules, whole and as
 * a held prefix; and policy_git_refs (the refs and capabilities a refused
 * push's report names): the same length, views inside the input.
 */
#include "fuzz_cond_common.h"
#include "policy/cond_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  github.com:\n"
	"    rules:\n"
	"      - { id: main, deny: { git: { refs: [refs/heads/main] } } }\n"
	"      - { id: agent, allow: { git: { refs: [\"refs/heads/agent/**\", \"refs/tags/v*\"], deny: [delete] } } }\n"
	"      - { id: h, hold: { git: { ops: [delete] } } }\n";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct policy *pol = fc_policy(yaml);
	static struct policy_git_cmd cmds[POLICY_GIT_COMMANDS_MAX];
	const char *err = NULL;
	size_t n;
	long r = policy_git_parse((const char *)data, size, cmds, &n, &err), s;

	if (r > (long)size || r < -2)
		__builtin_trap();
	s = policy_git_section_len((const char *)data, size);
	if (s != r)
		__builtin_trap();
	if (r >= 0) {
		/* a complete section parses the same with anything after it */
		if (policy_git_section_len((const char *)data, (size_t)r) != r)
			__builtin_trap();
		for (size_t i = 0; i < n; i++)
			if (cmds[i].ref_len == 0 || cmds[i].ref_len > POLICY_GIT_REF_MAX)
				__builtin_trap();
	}
	{
		const char *refs[8], *caps;
		size_t lens[8], nr, cl;
		const char *lo = (const char *)data, *hi = lo + size;

		if (policy_git_refs((const char *)data, size, refs, lens, 8, &nr, &caps, &cl) != r)
			__builtin_trap();
		if (nr > 8 || (r <= 0 && nr != 0) || (r > 0 && nr != (n < 8 ? n : 8)))
			__builtin_trap();
		for (size_t i = 0; i < nr; i++)
			if (refs[i] < lo || refs[i] + lens[i] > hi)
				__builtin_trap();
		if (cl > 0 && (caps < lo || caps + cl > hi))
			__builtin_trap();
	}
	fc_decide(pol, "github.com", "POST", "/o/r/git-receive-pack", "application/x-git-receive-pack-request", NULL, data,
	          size, 0);
	fc_decide(pol, "github.com", "POST", "/o/r/git-receive-pack", "application/x-git-receive-pack-request", NULL, data,
	          size, 1);
	return 0;
}
