#!/usr/bin/python3
# scripts/doc_check.py - the logic of scripts/doc-check.sh (read that file's header for what is checked, the
# fragment markers and the output).  Standard library only; runs the sluice binary it is given, never the network.
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

SHELLISH = {"", "sh", "bash", "shell", "console", "text", "ini"}
FRAGMENT_KINDS = ("rules", "rule", "hosts", "keys", "cases", "skip")
WRAP_CA = "ca: /var/lib/sluice/ca\n"
OPT_RE = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
WORD_RE = re.compile(r"^[a-z][a-z-]*$")
SUBS_RE = re.compile(r"^[a-z]+(\|[a-z]+)*$")
# `sluice` as a command word: at the start or after a blank or a shell separator, optionally with a path
SLUICE_RE = re.compile(r"(?:^|(?<=[\s;&|(`'\"=]))(?:[\w.$/{}-]*/)?sluice(?=\s|$)")
# what may stand before a command word: a prompt, VAR=value, a wrapper (sudo, exec, env, timeout N, ip netns
# exec NS), a systemd Exec*= key, after the start or a shell separator
LEAD_RE = re.compile(r"(?:^|[;&|(`]|\$\()\s*(?:[\w-]*[$#]\s+)?(?:(?:[A-Za-z_]\w*=\S*|sudo|exec|env(?:\s+-i)?|nohup|"
                     r"timeout\s+\S+|ip\s+netns\s+exec\s+\S+)\s+)*(?:Exec\w*=)?$")
SAME_RE = re.compile(r"^\s*<!--\s*same-as:\s*(\S+)\s*-->\s*$")
HTML_MARK_RE = re.compile(r"^\s*<!--\s*fragment:\s*(.*?)\s*-->\s*$")
YAML_MARK_RE = re.compile(r"^\s*#\s*fragment\b:?\s*(.*?)\s*$")


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run(argv, timeout=60):
    """<argv>'s exit status and output; a run past <timeout> seconds is a failure (status -1), never a hang."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, errors="replace")
        return Result(r.returncode, r.stdout, r.stderr)
    except subprocess.TimeoutExpired:
        return Result(-1, "", "%s: no answer in %d s" % (" ".join(argv[1:]), timeout))


class Checker:
    def __init__(self, binary, root):
        self.bin = binary
        self.root = root
        self.passed = 0
        self.failed = 0
        self.stats = {"commands": 0, "whole": 0, "skipped": 0, "examples": 0}
        self.wrapped = {}
        self.helps = {}
        self.links, self.anchors = [], {}
        self.verbose = os.environ.get("DOC_CHECK_VERBOSE") == "1"
        self.load_help()
        self.tmp = tempfile.mkdtemp(prefix="sluice-doc-check.")  # after load_help, which may exit

    # ------------------------------------------------------------------ results
    def ok(self):
        self.passed += 1

    def bad(self, where, msg):
        self.failed += 1
        print("%s: %s" % (where, msg))

    def rel(self, path):
        return os.path.relpath(path, self.root)

    # ------------------------------------------------------------------ what --help names
    def help_of(self, words):
        key = tuple(words)
        if key not in self.helps:
            r = run([self.bin] + list(words) + ["--help"])
            self.helps[key] = (r.returncode, r.stdout + r.stderr)
        return self.helps[key]

    def load_help(self):
        rc, text = self.help_of([])
        if rc != 0 or "commands:" not in text:
            sys.exit("doc-check: '%s --help' did not list the commands (exit %d)" % (self.bin, rc))
        self.top_opts = set(OPT_RE.findall(text.split("commands:")[0])) | {"--help"}
        self.commands = {}
        for line in text.split("commands:", 1)[1].splitlines():
            m = re.match(r"^  ([a-z][a-z-]*)(?: (\S+))?", line)
            if not m:
                continue
            subs = self.commands.setdefault(m.group(1), set())
            if m.group(2) and SUBS_RE.match(m.group(2)):
                subs.update(m.group(2).split("|"))
        self.allowed = {}
        for cmd, subs in self.commands.items():
            for sub in sorted(subs) or [None]:
                words = [cmd] + ([sub] if sub else [])
                rc, text = self.help_of(words)
                where = "sluice %s --help" % " ".join(words)
                if rc != 0 or not text.strip():
                    self.bad(where, "exits %d or prints nothing" % rc)
                    continue
                self.ok()
                self.allowed[(cmd, sub)] = self.scoped_options(text, cmd, sub)

    @staticmethod
    def scoped_options(text, cmd, sub):
        """The options <text> names, leaving out the usage lines of <cmd>'s other subcommands, and the values
        of options that list them (`--backend netns|qemu|firecracker`)."""
        keep, other = [], False
        for line in text.splitlines():
            m = re.match(r"^\s*(?:usage:\s*)?sluice\s+%s\s+([a-z]+)" % re.escape(cmd), line)
            if m:
                other = sub is not None and m.group(1) != sub
            elif not re.match(r"^\s+\[", line):
                other = False
            if not other:
                keep.append(line)
        kept = "\n".join(keep)
        opts = set(OPT_RE.findall(kept)) | {"--help"}
        values = {}
        for o, v in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)[ =]([a-z0-9]+(?:\|[a-z0-9]+)+)\b", kept):
            values[o] = set(v.split("|"))
        return opts, values

    # ------------------------------------------------------------------ sluice command lines
    @staticmethod
    def tokens(s):
        """Shell-like words of <s> up to the end of the command: an unquoted | ; & ) ` < > or a # after a
        blank ends it.  `[...]` (a usage synopsis) is one level: `|` inside it separates alternatives."""
        out, cur, q, depth, have = [], "", None, 0, False
        i = 0
        while i < len(s):
            c = s[i]
            if q:
                if c == q:
                    q = None
                else:
                    cur += c
            elif c in "'\"":
                q, have = c, True
            elif c == "\\" and i + 1 < len(s):
                cur += s[i + 1]
                have = True
                i += 1
            elif c.isspace():
                if have:
                    out.append(cur)
                cur, have = "", False
            elif c == "#" and not have:
                break
            elif c == "|" and depth == 0 and not (have and i + 1 < len(s) and not s[i + 1].isspace()):
                break
            elif c in ";&)`<>" and depth == 0:
                break
            else:
                if c == "[":
                    depth += 1
                elif c == "]" and depth > 0:
                    depth -= 1
                cur += c
                have = True
            i += 1
        if have:
            out.append(cur)
        return out

    def check_command(self, where, text):
        toks = self.tokens(text)
        if not toks:
            return
        first = toks[0].strip("[]")
        if first.startswith("-"):
            self.stats["commands"] += 1
            opt = first.split("=")[0]
            if opt in self.top_opts:
                self.ok()
            else:
                self.bad(where, "sluice %s: '%s' is not named by `sluice --help`" % (" ".join(toks), opt))
            return
        if not WORD_RE.match(first):
            return  # not an invocation: "sluice run: started ...", "sluice[812]"
        self.stats["commands"] += 1
        cmdline = "sluice " + " ".join(toks)
        if self.verbose:
            print("%s: checking %s" % (where, cmdline))
        if first not in self.commands:
            self.bad(where, "%s: no command '%s' in `sluice --help`" % (cmdline, first))
            return
        subs, rest, chosen = self.commands[first], toks[1:], [None]
        if subs and rest:
            t = rest[0]
            if SUBS_RE.match(t):
                chosen = t.split("|")
                unknown = [x for x in chosen if x not in subs]
                if unknown:
                    self.bad(where, "%s: no subcommand '%s' in `sluice %s --help`" % (cmdline, unknown[0], first))
                    return
                rest = rest[1:]
            elif t not in ("--help", "-h"):
                self.bad(where, "%s: '%s' is not a subcommand of `sluice %s` (%s)" %
                         (cmdline, t, first, ", ".join(sorted(subs))))
                return
        elif subs:
            chosen = [sorted(subs)[0]]
        for sub in chosen:
            if (first, sub) not in self.allowed:
                self.bad(where, "%s: `sluice %s%s --help` failed" % (cmdline, first, " " + sub if sub else ""))
                return
            opts, values = self.allowed[(first, sub)]
            for i, tok in enumerate(rest):
                if tok == "--":
                    break
                tok = tok.strip("[]").rstrip(".")
                if not OPT_RE.fullmatch(tok.split("=")[0]):
                    continue
                opt = tok.split("=")[0]
                if opt not in opts:
                    self.bad(where, "%s: option '%s' is not named by `sluice %s%s --help`" %
                             (cmdline, opt, first, " " + sub if sub else ""))
                    return
                val = tok.split("=", 1)[1] if "=" in tok else (rest[i + 1] if i + 1 < len(rest) else None)
                if opt in values and val is not None and re.fullmatch(r"[a-z0-9]+", val) and val not in values[opt]:
                    self.bad(where, "%s: %s %s: `sluice %s --help` allows %s" %
                             (cmdline, opt, val, first, "|".join(sorted(values[opt]))))
                    return
        self.ok()

    def scan_commands(self, where_file, lineno, text):
        for m in SLUICE_RE.finditer(text):
            if not LEAD_RE.search(text[: m.start()]):
                continue  # an argument of another command: `cmake --target sluice`
            self.check_command("%s:%d" % (where_file, lineno + text.count("\n", 0, m.start())), text[m.end():])

    # ------------------------------------------------------------------ markdown
    def check_markdown(self, path):
        rel = self.rel(path)
        lines = open(path, encoding="utf-8").read().split("\n")
        i, para, para_start = 0, [], 0
        while i < len(lines):
            m = re.match(r"^(\s*)(```+|~~~+)\s*([\w-]*)\s*$", lines[i])
            if not m:
                if lines[i].strip():
                    if not para:
                        para_start = i
                    para.append(lines[i])
                elif para:
                    self.scan_prose(rel, para_start, para)
                    para = []
                i += 1
                continue
            if para:
                self.scan_prose(rel, para_start, para)
                para = []
            fence, lang, start = m.group(2), m.group(3).lower(), i + 1
            j = start
            while j < len(lines) and not re.match(r"^\s*%s\s*$" % re.escape(fence), lines[j]):
                j += 1
            if j == len(lines):
                self.bad("%s:%d" % (rel, i + 1), "a code fence that is never closed")
                return
            body = lines[start:j]
            if lang == "yaml":
                marker = HTML_MARK_RE.match(lines[i - 1]) if i > 0 else None
                same = SAME_RE.match(lines[i - 1]) if i > 0 else None
                self.check_yaml("%s:%d" % (rel, start + 1), body, marker.group(1) if marker else None)
                if same:
                    self.check_same("%s:%d" % (rel, start + 1), body, same.group(1))
            elif lang in SHELLISH:
                self.scan_code(rel, start, body)
            i = j + 1
        if para:
            self.scan_prose(rel, para_start, para)

    def scan_prose(self, rel, start, para):
        text = "\n".join(para)
        for m in re.finditer(r"(`+)(.+?)\1", text, re.S):
            lineno = start + 1 + text.count("\n", 0, m.start())
            self.scan_commands(rel, lineno, m.group(2).replace("\n", " "))
        bare = re.sub(r"(`+)(.+?)\1", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
        for m in re.finditer(r"\]\(([^()\s]+)\)", bare):
            self.links.append((rel, start + 1 + bare.count("\n", 0, m.start()), m.group(1)))
        for l in para:
            h = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", l)
            if h:
                self.heading(rel, h.group(1))

    def heading(self, rel, title):
        """Records the anchor GitHub gives the heading <title> of document <rel>."""
        slug = re.sub(r"[^\w\- ]", "", title.replace("`", "").lower()).replace(" ", "-")
        seen = self.anchors.setdefault(rel, {})
        n = seen.get(slug)
        seen[slug] = 0 if n is None else n + 1
        if n is not None:
            seen["%s-%d" % (slug, n + 1)] = 0

    def check_links(self):
        """Every relative link names a file of the checkout, and a #anchor a heading of that document."""
        for rel, lineno, target in self.links:
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(rel), path)) if path else rel
            where = "%s:%d" % (rel, lineno)
            if not os.path.exists(os.path.join(self.root, dest)):
                self.bad(where, "link %s: no file %s" % (target, dest))
            elif anchor and dest.endswith(".md") and anchor not in self.anchors.get(dest, {}):
                self.bad(where, "link %s: no heading with the anchor #%s in %s" % (target, anchor, dest))
            else:
                self.ok()

    def scan_code(self, rel, start, body):
        k = 0
        while k < len(body):
            line, first = body[k], k
            while line.endswith("\\") and k + 1 < len(body):
                k += 1
                line = line[:-1] + " " + body[k].lstrip()
            self.scan_commands(rel, start + first + 1, line)
            k += 1

    # ------------------------------------------------------------------ YAML blocks
    def check_yaml(self, where, body, html_kind):
        """<body>: the lines of one ```yaml block; <html_kind>: the kind of a <!-- fragment: ... --> before it."""
        kind = html_kind
        lines = list(body)
        nonblank = [n for n, l in enumerate(lines) if l.strip()]
        if kind is None and nonblank:
            m = YAML_MARK_RE.match(lines[nonblank[0]])
            if m:
                kind = m.group(1)
                lines[nonblank[0]] = ""  # keeps the line numbers
        text = textwrap.dedent("\n".join(lines)) + "\n"
        if kind is None:
            self.stats["whole"] += 1
            self.policy_check(where, text, 0)
            return
        word = kind.split()[0] if kind.split() else ""
        if word not in FRAGMENT_KINDS:
            self.bad(where, "fragment marker '%s': the kind must be one of %s" % (kind, ", ".join(FRAGMENT_KINDS)))
            return
        if word == "skip":
            if len(kind.split()) < 2:
                self.bad(where, "'fragment: skip' needs a reason")
                return
            self.stats["skipped"] += 1
            self.ok()
            return
        self.wrapped[word] = self.wrapped.get(word, 0) + 1
        if word == "cases":
            self.cases_check(where, text, kind.split()[1] if len(kind.split()) > 1 else None)
            return
        if word == "keys":
            head = "" if re.search(r"^ca:", text, re.M) else WRAP_CA
            tail = ""
            if not re.search(r"^hosts:", text, re.M):
                names = []
                for flow in re.findall(r"^\s+hosts:\s*\[(.*?)\]", text, re.M):
                    for h in flow.split(","):
                        h = h.strip().strip("'\"")
                        if h and h not in names:
                            names.append(h)
                if names:
                    tail = "hosts:\n" + "".join('  "%s": {}\n' % h for h in names)
            self.policy_check(where, head + text + tail, head.count("\n"))
            return
        if word == "hosts":
            head = WRAP_CA + "hosts:\n"
            self.policy_check(where, head + textwrap.indent(text, "  "), head.count("\n"))
        elif word == "rules":
            head = WRAP_CA + "hosts:\n  x.example:\n    rules:\n"
            self.policy_check(where, head + textwrap.indent(text, "      "), head.count("\n"))
        elif word == "rule":
            head = WRAP_CA + "hosts:\n  x.example:\n    rules:\n      - allow:\n"
            self.policy_check(where, head + textwrap.indent(text, "          "), head.count("\n"))

    @staticmethod
    def yaml_lines(text):
        """<text> without comments, trailing blanks and blank lines (a ' #' inside quotes is kept)."""
        out = []
        for l in text.splitlines():
            l = re.sub(r"""^((?:[^'"#]|'[^']*'|"[^"]*")*?)\s*(?:^|\s)#.*$""", r"\1", l).rstrip()
            if l.strip():
                out.append(l)
        return out

    def check_same(self, where, body, path):
        """A block that says it is a file of the checkout is that file, comments and blank lines aside."""
        p = os.path.join(self.root, path)
        if not os.path.exists(p):
            self.bad(where, "same-as %s: no such file" % path)
            return
        doc, real = self.yaml_lines("\n".join(body)), self.yaml_lines(open(p, encoding="utf-8").read())
        if doc == real:
            self.ok()
            return
        k = next((n for n in range(min(len(doc), len(real))) if doc[n] != real[n]), min(len(doc), len(real)))
        self.bad(where, "this block is not %s: from its line %d on, the block has %r, the file %r" %
                 (path, k + 1, doc[k] if k < len(doc) else "(nothing)", real[k] if k < len(real) else "(nothing)"))

    def write_tmp(self, name, text):
        p = os.path.join(self.tmp, name)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        return p

    def first_error(self, out, path, where, offset):
        """The first error of <out>, its line moved from the checked file <path> back to the document."""
        base, line = where.rsplit(":", 1)
        for l in out.splitlines():
            m = re.match(r"^(FAIL )?%s:(\d+):(?:\d+:)? (.*)$" % re.escape(path), l)
            if m:
                n = max(int(m.group(2)) - offset, 1)
                return "%s:%d" % (base, int(line) + n - 1), m.group(3)
        return where, out.strip().splitlines()[-1] if out.strip() else "failed"

    def policy_check(self, where, text, offset):
        p = self.write_tmp("block.yaml", text)
        r = run([self.bin, "policy", "check", "--strict", p])
        if r.returncode == 0:
            self.ok()
            return
        w, msg = self.first_error(r.stdout + r.stderr, p, where, offset)
        self.bad(w, "sluice policy check --strict: " + msg)

    def cases_check(self, where, text, policy):
        """Without <policy>: the cases must load (mismatches against an empty policy are expected); with it
        (a path from the checkout's root): every case must pass."""
        cases = self.write_tmp("cases.yaml", text)
        pol = os.path.join(self.root, policy) if policy else self.write_tmp("empty.yaml", WRAP_CA + "hosts: {}\n")
        r = run([self.bin, "policy", "test", pol, cases])
        out = r.stdout + r.stderr
        loaded = re.search(r"^%s: \d+ cases?, " % re.escape(cases), r.stdout, re.M)
        if (r.returncode == 0) if policy else (loaded and r.returncode in (0, 1)):
            self.ok()
            return
        w, msg = self.first_error(out, cases, where, 0)
        self.bad(w, "sluice policy test: " + msg)

    # ------------------------------------------------------------------ examples/
    def check_examples(self):
        for p in sorted(glob.glob(os.path.join(self.root, "examples", "*.yaml"))):
            rel = self.rel(p)
            self.stats["examples"] += 1
            if p.endswith(".cases.yaml"):
                pol = p[: -len(".cases.yaml")] + ".yaml"
                if not os.path.exists(pol):
                    self.bad(rel, "no policy %s for these cases" % self.rel(pol))
                    continue
                r = run([self.bin, "policy", "test", pol, p])
                what = "sluice policy test %s" % self.rel(pol)
            else:
                r = run([self.bin, "policy", "check", "--strict", p])
                what = "sluice policy check --strict"
            if r.returncode == 0:
                self.ok()
                continue
            out = (r.stdout + r.stderr).replace(p, rel).strip().splitlines()
            fails = [l for l in out if l.startswith("FAIL ") or l.startswith(rel + ":")]
            self.bad(rel, "%s: %s" % (what, (fails or out or ["exit %d" % r.returncode])[0]))

    def check_keys(self):
        """Every key of the loader's key tables (policy/*.c) is a term of sluice.yaml(5) and is named in a guide
        (docs/*.md): a key added to the loader without its documentation fails here, before the package check."""
        if not os.path.isdir(os.path.join(self.root, "policy")):
            return
        keys = set()
        for f in sorted(glob.glob(os.path.join(self.root, "policy", "*.c"))):
            with open(f) as fh:
                src = fh.read()
            for m in re.finditer(r'static const char \*const \w*keys\w*\[\w*\]\s*=\s*\{(.*?)\};', src, re.S):
                keys.update(re.findall(r'"([^"]+)"', m.group(1)))
        # the project's loader has over a hundred keys; fewer than 50 means the tables were not found
        if len(keys) < (50 if os.path.exists(os.path.join(self.root, "policy", "config.c")) else 1):
            self.bad("policy/*.c", "only %d keys found in the loader's key tables" % len(keys))
            return
        man = os.path.join(self.root, "docs", "man", "sluice.yaml.5.scd")
        with open(man) as fh:
            man_text = fh.read()
        guides = ""
        for g in sorted(glob.glob(os.path.join(self.root, "docs", "*.md"))):
            with open(g) as fh:
                guides += fh.read()
        for k in sorted(keys):
            # named in a guide: as `key` or `a.key`, or as a key in a YAML example (`key:`)
            named = re.search(r'`(?:[\w.]+\.)?%s`|[\s{,]%s: ' % (re.escape(k), re.escape(k)), guides)
            if "*%s*" % k not in man_text:
                self.bad(self.rel(man), "the loader's key %s has no entry (*%s*)" % (k, k))
            elif not named:
                self.bad("docs/*.md", "the loader's key %s is named in no guide (`%s`)" % (k, k))
            else:
                self.ok()
        self.stats["keys"] = len(keys)

    def check_man(self):
        """Every docs/man/*.scd renders with scdoc (the package build runs it; a stray _ or * is an error there)."""
        pages = sorted(glob.glob(os.path.join(self.root, "docs", "man", "*.scd")))
        if not pages:
            return
        if shutil.which("scdoc") is None:
            self.bad("docs/man", "scdoc is not installed (scripts/deps.sh installs it): the man pages were not checked")
            return
        for page in pages:
            with open(page, "rb") as fh:
                r = subprocess.run(["scdoc"], stdin=fh, capture_output=True, timeout=60)
            if r.returncode == 0:
                self.ok()
            else:
                self.bad(self.rel(page), "scdoc: %s" % r.stderr.decode(errors="replace").strip())

    def check_man_options(self):
        """sluice(1) names every long option of every --help (package-check checks the built page the same way;
        this finds it in the ctest run, minutes earlier)."""
        page = os.path.join(self.root, "docs", "man", "sluice.1.scd")
        if not os.path.exists(page):
            return
        with open(page, encoding="utf-8") as fh:
            text = fh.read()
        opts = set(self.top_opts)
        for o, _values in self.allowed.values():
            opts |= o
        for o in sorted(x for x in opts if x.startswith("--") and x != "--help"):
            if o in text:
                self.ok()
            else:
                self.bad(self.rel(page), "the option %s of a `sluice ... --help` has no entry in sluice(1)" % o)

    def run(self):
        docs = [os.path.join(self.root, "README.md")] + sorted(glob.glob(os.path.join(self.root, "docs", "*.md")))
        for d in docs:
            if os.path.exists(d):
                self.check_markdown(d)
        self.check_links()
        self.check_examples()
        self.check_keys()
        self.check_man()
        self.check_man_options()
        s = self.stats
        print("doc-check: %d links; %d sluice command lines; yaml blocks: %d checked whole, %d wrapped (%s), %d skipped; "
              "%d example files; %d loader keys" % (len(self.links), s["commands"], s["whole"], sum(self.wrapped.values()),
                                    ", ".join("%s %d" % kv for kv in sorted(self.wrapped.items())) or "none",
                                    s["skipped"], s["examples"], s.get("keys", 0)))
        print("doc-check: %d passed, %d failed" % (self.passed, self.failed))
        return 0 if self.failed == 0 else 1


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = list(argv[1:])
    if len(args) == 3 and args[1] == "--root":
        root = os.path.abspath(args[2])
        args = args[:1]
    if len(args) != 1 or not os.access(args[0], os.X_OK) or not os.path.isdir(root):
        print("usage: scripts/doc-check.sh BINARY [--root DIR]   (BINARY: an executable sluice)", file=sys.stderr)
        return 2
    c = Checker(os.path.abspath(args[0]), root)
    try:
        return c.run()
    finally:
        shutil.rmtree(c.tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
