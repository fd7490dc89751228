#!/usr/bin/python3
"""ocsf_validate.py FIXTURE_DIR EVENTS_JSONL [AUDIT_FILE]
   ocsf_validate.py --self-test FIXTURE_DIR EVENTS_JSONL

Validates every event of EVENTS_JSONL (audit.ocsf's file) against the OCSF 1.3.0 definitions in FIXTURE_DIR
(tests/fixtures/ocsf-1.3.0: classes, objects and types of the schema export of release 1.3.0, see its README).

For each event: its class (4001, 4002 or 4003, the classes the sink writes); metadata.version "1.3.0";
metadata.profiles, each one a profile of the class; every required attribute of the class present (an
attribute of a profile is required only when the event applies that profile); no attribute the class does not
define, none of a profile the event does not apply, none 1.3.0 deprecates; the value of every attribute checked
against its type, recursively into objects (the same rules for the object's attributes, and its
at_least_one constraint), into arrays (is_array); the value of every enumerated integer (*_id, class_uid,
category_uid, type_uid) one of the enumeration's keys; type_uid = class_uid * 100 + activity_id. Recommended
attributes are counted and reported (second output line); those this gateway promises (docs/audit-schema.md,
PROMISED below) must be present. With AUDIT_FILE, each event's metadata.sequence must be a request, dns or
denial record of it.

Prints "ok N 4001=a 4002=b 4003=c" and a report of the recommended attributes left out, or the first problems
(exit 1).

--self-test takes one valid event of each class from EVENTS_JSONL, breaks it in each of the ways the checks
above catch (a required attribute removed, an invented key, a wrong type, an enum value out of range, ...) and
exits 0 only if the validator rejects every broken copy with the expected complaint and accepts the original.
"""
import copy, ipaddress, json, os, re, sys
from urllib.parse import urlsplit

# recommended attributes the mapping promises for each class (docs/audit-schema.md)
PROMISED = {4002: ["src_endpoint", "message", "status_id", "disposition_id", "status"],
            4003: ["query", "answers", "rcode_id", "rcode", "src_endpoint", "status_id", "disposition_id"],
            4001: ["src_endpoint", "status_id", "disposition_id"]}
RECORD_KIND = {4001: "denial", 4002: "request", 4003: "dns"}
VERSION = "1.3.0"
# plausibility of a timestamp_t (milliseconds since the epoch, 2001 .. 2286): stricter than the type, which only
# says "long_t, milliseconds"; it catches seconds written for milliseconds
TS_MIN, TS_MAX = 10**12, 10**13


class Schema:
    def __init__(self, fix):
        def load(*p):
            with open(os.path.join(fix, *p)) as f:
                return json.load(f)
        types = load("types.json")
        if types.get("version") != VERSION:
            raise SystemExit("fixture %s is not OCSF %s" % (fix, VERSION))
        self.types = types["types"]
        self.classes = {}
        for n in os.listdir(os.path.join(fix, "classes")):
            c = load("classes", n)
            self.classes[c["uid"]] = c
        self.objects = {}
        for n in os.listdir(os.path.join(fix, "objects")):
            o = load("objects", n)
            self.objects[o["name"]] = o


class Validator:
    def __init__(self, schema):
        self.s = schema
        self.problems = []
        self.missing_rec = {}

    def bad(self, where, msg):
        self.problems.append("%s: %s" % (where, msg))

    # ---------------------------------------------------------------- scalar types
    def check_type(self, where, tname, v):
        t = self.s.types.get(tname)
        if t is None:
            return self.bad(where, "type %s is not in the fixture" % tname)
        base = t.get("type")
        if base is not None and not self.check_type(where, base, v):
            return False
        ok = True
        if tname == "integer_t":
            ok = isinstance(v, int) and not isinstance(v, bool) and -2**31 <= v < 2**31  # long_t is the 8-byte one
        elif tname == "long_t":
            ok = isinstance(v, int) and not isinstance(v, bool) and -2**63 <= v < 2**63
        elif tname == "string_t":
            ok = isinstance(v, str)
        elif tname == "boolean_t":
            ok = isinstance(v, bool)
        elif tname == "float_t":
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        elif tname == "timestamp_t":
            ok = TS_MIN <= v < TS_MAX
        elif tname == "ip_t":
            try:
                ipaddress.ip_address(v)
            except ValueError:
                ok = False
        elif tname == "url_t":  # 1.3.0 gives url_t no pattern; a URL the sink writes has a scheme and a host
            p = urlsplit(v)
            ok = bool(p.scheme) and bool(p.netloc)
        if ok and "max_len" in t and isinstance(v, str) and len(v.encode()) > t["max_len"]:
            ok = False
        if ok and "range" in t and not (t["range"][0] <= v <= t["range"][1]):
            ok = False
        if ok and "regex" in t and re.search(t["regex"], v) is None:
            ok = False
        if ok and "values" in t and v not in t["values"]:
            ok = False
        if not ok:
            self.bad(where, "%r is not a %s" % (v, tname))
        return ok

    # ---------------------------------------------------------------- one attribute's value
    def check_value(self, where, d, v, profiles):
        if d.get("is_array"):
            if not isinstance(v, list):
                return self.bad(where, "not an array")
            for i, x in enumerate(v):
                self.check_one("%s[%d]" % (where, i), d, x, profiles)
        else:
            self.check_one(where, d, v, profiles)

    def check_one(self, where, d, v, profiles):
        if "object_type" in d:
            return self.check_object(where, d["object_type"], v, profiles)
        if not self.check_type(where, d["type"], v):
            return
        if d.get("enum_omitted"):
            self.bad(where, "enumeration not kept in the fixture: the sink must not set this attribute")
        elif "enum" in d and str(v) not in d["enum"]:
            self.bad(where, "%r is not in the enumeration %s" % (v, ",".join(d["enum"])))

    # ---------------------------------------------------------------- a set of attributes (an event or an object)
    def check_members(self, where, what, defs, o, profiles, rec_key):
        for k, d in defs.items():
            if k in o:
                continue
            applies = "profile" not in d or d["profile"] in profiles
            if d["requirement"] == "required" and applies:
                self.bad(where, "required %s.%s missing" % (what, k))
            elif d["requirement"] == "recommended" and applies and "deprecated" not in d:
                self.missing_rec.setdefault(rec_key, {}).setdefault(k, 0)
                self.missing_rec[rec_key][k] += 1
        for k, v in o.items():
            d = defs.get(k)
            w = "%s.%s" % (where, k)
            if d is None:
                self.bad(where, "%s has no attribute %s" % (what, k))
            elif "profile" in d and d["profile"] not in profiles:
                self.bad(w, "belongs to profile %s, which metadata.profiles does not apply" % d["profile"])
            elif "deprecated" in d:
                self.bad(w, "deprecated in OCSF %s (%s)" % (VERSION, d["deprecated"]))
            else:
                self.check_value(w, d, v, profiles)

    def check_constraints(self, where, defn, o):
        group = (defn.get("constraints") or {}).get("at_least_one")
        if group and not any(g in o for g in group):
            self.bad(where, "needs one of %s" % ",".join(group))

    def check_object(self, where, oname, o, profiles):
        defn = self.s.objects.get(oname)
        if defn is None:
            return self.bad(where, "object %s is not in the fixture (the sink writes no such object)" % oname)
        if not isinstance(o, dict):
            return self.bad(where, "not an object (%s)" % oname)
        self.check_members(where, oname, defn["attributes"], o, profiles, oname)
        self.check_constraints(where, defn, o)

    # ---------------------------------------------------------------- an event
    def check_event(self, where, ev):
        if not isinstance(ev, dict):
            return self.bad(where, "not a JSON object")
        cu = ev.get("class_uid")
        c = self.s.classes.get(cu) if isinstance(cu, int) and not isinstance(cu, bool) else None
        if c is None:
            return self.bad(where, "class_uid %r is not one of %s" % (cu, sorted(self.s.classes)))
        md = ev.get("metadata")
        profiles = md.get("profiles", []) if isinstance(md, dict) else []
        if not isinstance(profiles, list) or not all(isinstance(p, str) for p in profiles):
            self.bad(where, "metadata.profiles is not an array of strings")
            profiles = []
        for p in profiles:
            if p not in c["profiles"]:
                self.bad(where, "metadata.profiles: %s is not a profile of %s" % (p, c["name"]))
        if isinstance(md, dict) and md.get("version") != VERSION:
            self.bad(where, "metadata.version %r, not %s" % (md.get("version"), VERSION))
        self.check_members(where, c["name"], c["attributes"], ev, set(profiles), cu)
        self.check_constraints(where, c, ev)
        a = ev.get("activity_id")
        if isinstance(a, int) and ev.get("type_uid") != cu * 100 + a:
            self.bad(where, "type_uid %r is not class_uid * 100 + activity_id (%d)" % (ev.get("type_uid"), cu * 100 + a))
        for k in PROMISED[cu]:
            if k not in ev:
                self.bad(where, "recommended %s missing (the mapping promises it)" % k)
        return cu


def load_events(path):
    evs = []
    for lineno, line in enumerate(open(path), 1):
        if line.strip():
            try:
                evs.append(("event %d" % lineno, json.loads(line)))
            except ValueError as e:
                evs.append(("event %d" % lineno, "not JSON: %s" % e))
    return evs


def validate(schema, events, audit=None):
    v = Validator(schema)
    seqs = None
    if audit:
        seqs = {}
        for line in open(audit):
            if line.strip():
                r = json.loads(line)
                seqs[r["seq"]] = r["type"]
    count = {uid: 0 for uid in schema.classes}
    for where, ev in events:
        if isinstance(ev, str):
            v.bad(where, ev)
            continue
        cu = v.check_event(where, ev)
        if cu is None:
            continue
        count[cu] += 1
        if seqs is not None:
            s = ev.get("metadata", {}).get("sequence")
            if seqs.get(s) != RECORD_KIND[cu]:
                v.bad(where, "metadata.sequence %r is not a %s record of the audit file" % (s, RECORD_KIND[cu]))
    if not events:
        v.bad("events", "none")
    return v, count


# ---------------------------------------------------------------- --self-test: the checks can fail
def breakages(cu):
    """(description, mutate(ev), expected substring of a problem) for an event of class <cu>."""
    def drop(*path):
        def f(ev):
            o = ev
            for k in path[:-1]:
                o = o[k]
            del o[path[-1]]
        return f

    def put(value, *path):
        def f(ev):
            o = ev
            for k in path[:-1]:
                o = o[k]
            o[path[-1]] = value
        return f
    req_obj = {4002: ("http_request", "required http_activity.http_request missing"),
               4003: ("severity_id", "required dns_activity.severity_id missing"),
               4001: ("dst_endpoint", "required network_activity.dst_endpoint missing")}[cu]
    out = [
        ("a required attribute of the class removed", drop(req_obj[0]), req_obj[1]),
        ("a required attribute of a profile removed", drop("action_id"), "action_id missing"),
        ("an invented key", put(1, "verdict"), "has no attribute verdict"),
        ("an invented key in an object", put("x", "metadata", "hash"), "metadata has no attribute hash"),
        ("a profile attribute without the profile", put([], "metadata", "profiles"), "which metadata.profiles does not apply"),
        ("a profile the class does not have", put(["security_control", "nope"], "metadata", "profiles"), "not a profile"),
        ("a deprecated attribute", put(200, "http_status") if cu == 4002 else put({"name": "p"}, "proxy"),
         "deprecated in OCSF"),
        ("an integer written as a string", put("3", "severity_id"), "is not a integer_t"),
        ("an integer out of 32 bits", put(2**31, "severity_id"), "is not a integer_t"),
        ("a boolean for an integer", put(True, "status_id"), "is not a integer_t"),
        ("an enum value not in the enumeration", put(7, "severity_id"), "not in the enumeration"),
        ("a disposition_id not in 1.3.0", put(28, "disposition_id"), "not in the enumeration"),
        ("type_uid not class_uid*100+activity_id", put(cu * 100 + 77, "type_uid"), "type_uid"),
        ("a time in seconds", put(1700000000, "time"), "is not a timestamp_t"),
        ("a required object attribute removed", drop("metadata", "product", "vendor_name"),
         "required product.vendor_name missing"),
        ("an ip_t that is no address", put("10.0.0.300", "src_endpoint", "ip"), "is not a ip_t"),
        ("a port_t out of range", put(70000, "src_endpoint", "port"), "is not a port_t"),
        ("a hostname_t with a space", put("a b", "src_endpoint", "hostname"), "is not a hostname_t"),
        ("an object where a string goes", put({"x": 1}, "message"), "is not a string_t"),
        ("a string where an object goes", put("x", "src_endpoint"), "not an object"),
        ("an object the fixture does not have", put({"version": "TLSv1.3"}, "tls"), "not in the fixture"),
        ("an object failing its at_least_one", put({"port": 1}, "src_endpoint"), "needs one of"),
        ("the wrong schema version", put("1.1.0", "metadata", "version"), "metadata.version"),
        ("a class the sink does not write", put(4004, "class_uid"), "class_uid 4004"),
        ("a promised recommended attribute removed", drop("status_id"), "status_id missing"),
    ]
    if cu == 4002:
        out += [("http_response.code removed", drop("http_response", "code"), "required http_response.code missing"),
                ("a url_t without a host", put("/x", "http_request", "url", "url_string"), "is not a url_t"),
                ("PATCH as activity 9 (not in 1.3.0)", put(9, "activity_id"), "not in the enumeration")]
    if cu == 4003:
        out += [("answers not an array", put({"rdata": "x"}, "answers"), "not an array"),
                ("a dns_answer without rdata", put([{"type": "A"}], "answers"), "required dns_answer.rdata missing"),
                ("an rcode_id not in 1.3.0", put(12, "rcode_id"), "not in the enumeration")]
    return out


def self_test(schema, events):
    fails = 0
    seen = set()
    for where, ev in events:
        if isinstance(ev, str) or ev.get("class_uid") in seen:
            continue
        v, _ = validate(schema, [(where, ev)])
        if v.problems:
            continue  # only a valid event is a fair starting point
        cu = ev["class_uid"]
        seen.add(cu)
        for desc, mutate, want in breakages(cu):
            broken = copy.deepcopy(ev)
            try:
                mutate(broken)
            except (KeyError, TypeError):
                print("self-test %d: cannot apply '%s' to %s" % (cu, desc, where))
                fails += 1
                continue
            v, _ = validate(schema, [(where, broken)])
            if not any(want in p for p in v.problems):
                print("self-test %d: '%s' not caught (problems: %s)" % (cu, desc, v.problems[:3]))
                fails += 1
    if seen != set(schema.classes):
        print("self-test: no valid event of class %s to start from" % sorted(set(schema.classes) - seen))
        fails += 1
    n = sum(len(breakages(cu)) for cu in seen)
    if fails:
        print("self-test FAILED: %d of %d" % (fails, n))
        return 1
    print("self-test ok %d broken events rejected, classes %s" % (n, " ".join(str(c) for c in sorted(seen))))
    return 0


def main(argv):
    if len(argv) >= 4 and argv[1] == "--self-test":
        return self_test(Schema(argv[2]), load_events(argv[3]))
    if len(argv) not in (3, 4):
        print(__doc__)
        return 2
    schema = Schema(argv[1])
    v, count = validate(schema, load_events(argv[2]), argv[3] if len(argv) > 3 else None)
    if v.problems:
        for p in v.problems[:20]:
            print("bad:", p)
        if len(v.problems) > 20:
            print("bad: ... and %d more" % (len(v.problems) - 20))
        return 1
    print("ok %d %s" % (sum(count.values()), " ".join("%d=%d" % (c, count[c]) for c in sorted(count))))
    print("recommended attributes left out (times): " + "; ".join(
        "%s: %s" % (k, ", ".join("%s %d" % (a, n) for a, n in sorted(m.items())))
        for k, m in sorted(v.missing_rec.items(), key=lambda kv: str(kv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
