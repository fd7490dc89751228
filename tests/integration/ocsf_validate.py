#!/usr/bin/python3
"""ocsf_validate.py FIXTURE_DIR EVENTS_JSONL [AUDIT_FILE]: validates every event of EVENTS_JSONL (audit.ocsf's
file) against the OCSF 1.x definitions in FIXTURE_DIR (tests/fixtures/ocsf-1.x: the class files of
ocsf/ocsf-schema and transcribed.json). For each event: its class (class_uid 4001/4002/4003 and category_uid 4),
type_uid = class_uid * 100 + activity_id with activity_id in the class's enum, every required attribute of the
class, its parents (network, base_event), the security_control profile and of each object present, no attribute
the definitions do not name, the type of every attribute present (integer, timestamp, string, port, ip, url,
object, array of objects), the at_least_one constraints, and the recommended attributes this gateway promises
(docs/audit-schema.md). With AUDIT_FILE, each event's metadata.sequence must be a request, dns or denial record
of it. Prints "ok N 4001=a 4002=b 4003=c" or the first problems (exit 1)."""
import ipaddress, json, os, sys

fix, events = sys.argv[1], sys.argv[2]
audit = sys.argv[3] if len(sys.argv) > 3 else None


def load(name):
    with open(os.path.join(fix, name)) as f:
        return json.load(f)


tr = load("transcribed.json")
network = load("network.json")
classes = {4002: load("http_activity.json"), 4003: load("dns_activity.json"), 4001: tr["network_activity"]}
objects = dict(tr["objects"])
for name in ("metadata", "product", "firewall_rule"):
    objects[name] = dict(load(name + ".json")["attributes"])
objects["firewall_rule"].update(tr["objects"]["firewall_rule"])
objects["product"]["vendor_name"] = {"requirement": "recommended"}   # product's 1.x vendor_name (transcribed)
types = tr["types"]
# the recommended attributes this gateway promises for each class (docs/audit-schema.md)
PROMISED = {4002: ["http_request", "src_endpoint", "dst_endpoint", "message", "status_id", "disposition_id"],
            4003: ["query", "answers", "rcode_id", "src_endpoint", "status_id", "disposition_id"],
            4001: ["src_endpoint", "dst_endpoint", "status_id", "disposition_id"]}
problems = []


def attrs_of(class_uid):
    out = {}
    for part in (tr["base_event"]["attributes"], tr["security_control_profile"]["attributes"],
                 network["attributes"], classes[class_uid]["attributes"]):
        for k, v in part.items():
            if k == "$include":
                continue
            merged = dict(out.get(k, {}))
            merged.update(v)
            out[k] = merged
    return out


def check_type(where, name, v):
    t = types.get(name)
    if t is None:
        problems.append("%s.%s: no type known" % (where, name))
        return
    if t.endswith("[]"):
        if not isinstance(v, list):
            problems.append("%s.%s: not an array" % (where, name))
            return
        for i, x in enumerate(v):
            check_object("%s.%s[%d]" % (where, name, i), t[:-2], x)
        return
    if t in objects:
        check_object(where + "." + name, t, v)
        return
    ok = {
        "integer_t": lambda x: isinstance(x, int) and not isinstance(x, bool) and -2**31 <= x < 2**31,
        "long_t": lambda x: isinstance(x, int) and not isinstance(x, bool),
        "timestamp_t": lambda x: isinstance(x, int) and not isinstance(x, bool) and x > 10**12,
        "string_t": lambda x: isinstance(x, str),
        "url_t": lambda x: isinstance(x, str) and "://" in x,
        "port_t": lambda x: isinstance(x, int) and 0 <= x <= 65535,
        "ip_t": lambda x: isinstance(x, str) and bool(ipaddress.ip_address(x)),
        "metadata": None,
    }[t]
    try:
        good = ok(v)
    except ValueError:
        good = False
    if not good:
        problems.append("%s.%s: %r is not a %s" % (where, name, v, t))


def check_object(where, oname, o):
    if not isinstance(o, dict):
        problems.append("%s: not an object (%s)" % (where, oname))
        return
    defs = objects[oname]
    for k, d in defs.items():
        if d.get("requirement") == "required" and k not in o:
            problems.append("%s: required %s.%s missing" % (where, oname, k))
    for k, v in o.items():
        if k not in defs:
            problems.append("%s: %s has no attribute %s" % (where, oname, k))
        else:
            check_type(where, k, v)
    if oname == "network_endpoint" and not any(k in o for k in ("ip", "uid", "name", "hostname")):
        problems.append("%s: network_endpoint needs one of ip, uid, name, hostname" % where)


seqs = None
if audit:
    seqs = {}
    for line in open(audit):
        if line.strip():
            r = json.loads(line)
            seqs[r["seq"]] = r["type"]
count = {4001: 0, 4002: 0, 4003: 0}
n = 0
for lineno, line in enumerate(open(events), 1):
    where = "event %d" % lineno
    ev = json.loads(line)
    n += 1
    cu = ev.get("class_uid")
    if cu not in classes:
        problems.append("%s: class_uid %r" % (where, cu))
        continue
    count[cu] += 1
    if ev.get("category_uid") != 4:
        problems.append("%s: category_uid %r" % (where, ev.get("category_uid")))
    defs = attrs_of(cu)
    enum = defs["activity_id"].get("enum", {})
    if str(ev.get("activity_id")) not in enum and ev.get("activity_id") != 99:
        problems.append("%s: activity_id %r not in the class's enum" % (where, ev.get("activity_id")))
    if ev.get("type_uid") != cu * 100 + (ev.get("activity_id") or 0):
        problems.append("%s: type_uid %r" % (where, ev.get("type_uid")))
    for k, d in defs.items():
        if d.get("requirement") == "required" and k not in ev:
            problems.append("%s: required %s missing" % (where, k))
    for k, v in ev.items():
        if k not in defs:
            problems.append("%s: class %d has no attribute %s" % (where, cu, k))
        elif k == "metadata":
            check_object(where, "metadata", v)
        else:
            check_type(where, k, v)
    for group in (network.get("constraints", {}).get("at_least_one", []),
                  classes[cu].get("constraints", {}).get("at_least_one", [])):
        if group and not any(g in ev for g in group):
            problems.append("%s: needs one of %s" % (where, group))
    for k in PROMISED[cu]:
        if k not in ev:
            problems.append("%s: recommended %s missing (the mapping promises it)" % (where, k))
    if seqs is not None:
        s = ev.get("metadata", {}).get("sequence")
        want = {4001: "denial", 4002: "request", 4003: "dns"}[cu]
        if seqs.get(s) != want:
            problems.append("%s: metadata.sequence %r is not a %s record of the audit file" % (where, s, want))
if n == 0:
    problems.append("no events")
if problems:
    for p in problems[:20]:
        print("bad:", p)
    sys.exit(1)
print("ok %d 4001=%d 4002=%d 4003=%d" % (n, count[4001], count[4002], count[4003]))
