#!/usr/bin/env bash
# scripts/doc-check.sh BINARY [--root DIR] - the docs describe what BINARY (an executable sluice) does.
#
# Checks, in README.md, docs/*.md and examples/ of the checkout (or of DIR):
#  1. Every `sluice ...` command line (in code blocks of sh, console, text, ini or no language, and in
#     inline code) uses only commands, subcommands and options that the binary's help names:
#     `sluice --help` lists the commands and their subcommands ("audit verify|query|..."), and the options of
#     `sluice CMD [SUB] ...` are those `sluice CMD [SUB] --help` prints, leaving out the usage lines of CMD's
#     other subcommands. An option whose usage lists its values (`--backend netns|qemu|firecracker`) must be
#     given one of them. A word `sluice` counts as a command only where a command can stand: at the start, after
#     a prompt (`$ `, `# `), VAR=value, sudo/exec/env/timeout N/ip netns exec NS, `Exec*=`, or a shell
#     separator; what follows it up to an unquoted | ; & ) ` < > or a ` #` comment is its arguments
#     (`[...]` in a synopsis is stripped; `a|b` without blanks lists alternatives; `--` ends the options).
#     Text after `sluice` that does not start with a lower-case word (`sluice run: started ...`) is output,
#     not a command.
#  2. Every ```yaml block passes `sluice policy check --strict` (warnings are failures too), unless it says it
#     is a fragment. The marker is the block's first non-blank line, `# fragment: KIND`, or an HTML comment
#     `<!-- fragment: KIND -->` on the line right before the fence. KIND is one of:
#       rules    a list of rules: checked inside `ca:` + `hosts: x.example: rules:`
#       rule     keys of one rule (`limit: ...`): checked inside such a host entry as `- allow: <block>`
#       hosts    entries of `hosts:` (`api.github.com: ...`): checked under `ca:` + `hosts:`
#       keys     top-level keys of a larger file: checked with `ca:` added when missing and, when the block
#                has no `hosts:`, an empty host entry for every host a secret names (`hosts: [a, b]`)
#       cases    a `sluice policy test` cases file: it must load (run against an empty policy);
#                `cases PATH` (PATH from the checkout's root): every case must pass against that policy
#       skip WHY not checked (WHY is required): only for YAML that is not a Sluice file (prometheus.yml)
#     Line numbers of failures point into the document, also for wrapped blocks.
#     A block after `<!-- same-as: PATH -->` (PATH from the tree's root) must also be that file, line for line,
#     once comments, trailing blanks and blank lines are dropped from both (policy.md's complete example).
#  3. Every examples/*.yaml passes `sluice policy check --strict`, and every examples/NAME.cases.yaml passes
#     `sluice policy test examples/NAME.yaml examples/NAME.cases.yaml`.
#  4. Every relative link ([text](file.md#anchor)) names a file of the tree and, for a .md file, a heading
#     whose anchor (as GitHub makes it: lower case, punctuation dropped, blanks to -, -1 for a repeat) matches.
#  Also: `sluice CMD [SUB] --help` exits 0 and prints something, for every command and subcommand.
#
# Output: one line per failure, `FILE:LINE: what`, then a count of what was checked (links; command lines; YAML
# blocks checked whole, wrapped per kind, skipped; example files), then "doc-check: N passed, M failed".
# Exit 0 iff nothing failed, 1 otherwise, 2 for bad usage. No network; a few seconds.
# DOC_CHECK_VERBOSE=1 also prints every command line as it is checked.
# --root DIR checks another tree against BINARY (tests/docs uses it on a tree of known-bad documents).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$(readlink -f "$0")")/doc_check.py" "$@"
