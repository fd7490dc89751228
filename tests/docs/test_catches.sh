#!/usr/bin/env bash
# scripts/doc-check.sh can fail: run on tests/docs/bad (documents and examples that are wrong on purpose), it
# must exit 1 and report exactly the places marked BAD there (and nothing marked good), each at its line:
# commands and options the help does not name, YAML blocks and fragments that do not load, cases that fail,
# broken links and anchors, loader keys (tests/docs/bad/policy/keys.c) without a man entry or a guide naming them, man pages scdoc refuses.
# Usage: test_catches.sh SLUICE_BINARY
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
root=$(readlink -f "$here/../..")
bin=${1:?usage: test_catches.sh SLUICE_BINARY}
out=$("$root/scripts/doc-check.sh" "$bin" --root "$here/bad")
rc=$?
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ "$rc" -eq 1 ] || bad "doc-check exited $rc on the bad tree, not 1"
expected='README.md:6 no command
README.md:6 no subcommand
README.md:8 --key-file
README.md:9 --backend docker
README.md:13 --config-file
README.md:15 --wrkspace
README.md:18 --all
README.md:27 --daemon
docs/blocks.md:9 unknown key .rule.
docs/blocks.md:26 unknown key .pth.
docs/blocks.md:51 warning: rule
docs/blocks.md:68 bad source
docs/blocks.md:75 fragment marker .policy.
docs/blocks.md:81 needs a reason
docs/blocks.md:98 unknown key in request
docs/blocks.md:113 expected .deny., got .allow.
docs/blocks.md:120 never closed
docs/links.md:11 no file docs/nothere.md
docs/links.md:11 no heading with the anchor #no-such-heading
docs/\*.md the loader.s key manonly is named in no guide
docs/man/sluice.yaml.5.scd the loader.s key undocumented has no entry
docs/man/sluice.yaml.5.scd scdoc: Error at
docs/same.md:19 this block is not examples/ok.yaml: from its line 5 on
examples/bad.yaml expected .deny. or .allow. for default
examples/ok.cases.yaml FAIL examples/ok.cases.yaml:4
examples/orphan.cases.yaml no policy'
n=0
while read -r where what; do
  n=$((n + 1))
  grep -E "^$where: .*$what" <<<"$out" >/dev/null || bad "not reported: $where ($what)"
done <<<"$expected"
findings=$(grep -cvE '^doc-check: ' <<<"$out")
[ "$findings" -eq "$n" ] || bad "$findings findings, expected exactly $n (something good was reported?)"
grep -qE "^doc-check: [0-9]+ passed, $n failed$" <<<"$out" || bad "the summary does not count $n failures"
grep -q 'yaml blocks: 5 checked whole, 8 wrapped (cases 3, hosts 1, keys 2, rule 1, rules 1), 1 skipped; 4 example files; 3 loader keys' \
  <<<"$out" || bad "the counts of checked, wrapped and skipped blocks are off"
if [ "$fail" -ne 0 ]; then
  echo "--- doc-check output:"; echo "$out"
  exit 1
fi
echo "doc-check on the bad tree: all $n planted mistakes reported, nothing else"
