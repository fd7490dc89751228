#!/usr/bin/python3
"""tests/integration/fake_firecracker.py: a stand-in for Firecracker (stdlib only), in two modes.

    fake_firecracker.py SOCK LOG [--fail PATH MESSAGE] [--hang PATH] [--hangup PATH] [--chunked PATH]
    fake_firecracker.py --vm EXPECT_JSON --no-api --config-file FILE

The second is the `firecracker` binary `sluice run --backend firecracker` starts (test_run_firecracker.sh puts a
wrapper named firecracker first in PATH that adds "--vm EXPECT_JSON"); see vm_main below.  The first is the API
socket:

Listens on the Unix socket SOCK (created here, removed first if stale) and serves HTTP/1.1 keep-alive
connections like Firecracker's API server does: each request must carry a Content-Length and a JSON body.
Every request is appended to LOG as one JSON line {"conn": N, "method", "path", "body"} (body: the parsed
JSON, or {"unparsed": TEXT}) before it is answered.  Answers, as Firecracker words them:
  - "HTTP/1.1 204 \\r\\nServer: Firecracker API\\r\\nConnection: keep-alive\\r\\n\\r\\n" for PUT to a known path;
  - 400 with {"fault_message": MESSAGE} for PATH given to --fail;
  - nothing at all (the request is logged, the connection stays open) for PATH given to --hang;
  - the connection closed without an answer for PATH given to --hangup;
  - a chunked 200 (which the driver must refuse) for PATH given to --chunked;
  - 400 {"fault_message": "Invalid request method and/or path: ..."} for anything else.
"""
import base64
import json
import os
import socket
import sys
import threading
import time

KNOWN = {"/boot-source", "/machine-config", "/network-interfaces/eth0", "/actions"}
HEAD_MAX = 16384
BODY_MAX = 1 << 20

lock = threading.Lock()
conn_ids = [0]


def log_line(path, rec):
    with lock, open(path, "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")


def answer(status, body=None):
    head = f"HTTP/1.1 {status} \r\nServer: Firecracker API\r\nConnection: keep-alive\r\n"
    if body is None:
        return (head + "\r\n").encode()
    data = json.dumps(body).encode()
    return (head + f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data


def serve(c, cid, opts, log):
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                b = c.recv(65536)
                if not b:
                    return
                buf += b
                if len(buf) > HEAD_MAX:
                    return
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, path, version = lines[0].split(" ", 2)
            hdrs = {}
            for l in lines[1:]:
                k, v = l.split(":", 1)
                hdrs[k.strip().lower()] = v.strip()
            n = int(hdrs.get("content-length", "0"))
            if n > BODY_MAX:
                return
            while len(buf) < n:
                b = c.recv(65536)
                if not b:
                    return
                buf += b
            raw, buf = buf[:n], buf[n:]
            try:
                body = json.loads(raw.decode("utf-8"))
            except ValueError:
                body = {"unparsed": raw.decode("latin-1")}
            log_line(log, {"conn": cid, "method": method, "path": path, "version": version,
                           "content_type": hdrs.get("content-type"), "body": body})
            if path in opts["hang"]:
                while c.recv(65536):
                    pass
                return
            if path in opts["hangup"]:
                return
            if path in opts["chunked"]:
                c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
            elif path in opts["fail"]:
                c.sendall(answer(400, {"fault_message": opts["fail"][path]}))
            elif method == "PUT" and path in KNOWN:
                c.sendall(answer(204))
            else:
                c.sendall(answer(400, {"fault_message": f"Invalid request method and/or path: {method} {path}"}))
    except (OSError, ValueError):
        return
    finally:
        c.close()


def main():
    sock, log = sys.argv[1], sys.argv[2]
    opts = {"fail": {}, "hang": set(), "hangup": set(), "chunked": set()}
    args = sys.argv[3:]
    while args:
        a = args.pop(0)
        if a == "--fail":
            p = args.pop(0)
            opts["fail"][p] = args.pop(0)
        elif a in ("--hang", "--hangup", "--chunked"):
            opts[a[2:]].add(args.pop(0))
        else:
            sys.exit(f"unknown option {a}")
    if os.path.exists(sock):
        os.unlink(sock)
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(sock)
    ls.listen(16)
    while True:
        c, _ = ls.accept()
        conn_ids[0] += 1
        threading.Thread(target=serve, args=(c, conn_ids[0], opts, log), daemon=True).start()


# ---------------------------------------------------------------- --vm: the binary, booting nothing
def vm_checks(exp, cfg):
    """(name, ok, detail) for everything sluice run must have set up before it started Firecracker."""
    out = []
    def check(name, ok, detail=""):
        out.append((name, bool(ok), detail))
    check("uid", os.getuid() == exp["uid"] and os.getgid() == exp["uid"], f"{os.getuid()}/{os.getgid()}")
    check("groups", os.getgroups() in ([], [exp["uid"]]), str(os.getgroups()))
    # what this process was started with (the wrapper's sh adds PWD; python's own LC_CTYPE coercion is not there)
    env = [e.split(b"=", 1)[0].decode() for e in open("/proc/self/environ", "rb").read().split(b"\0") if e]
    check("env-empty", set(env) <= {"PWD"}, ",".join(sorted(env)))
    bs, mc, nets = cfg["boot-source"], cfg["machine-config"], cfg["network-interfaces"]
    check("kernel", bs["kernel_image_path"] == exp["kernel"] and os.access(bs["kernel_image_path"], os.R_OK),
          bs["kernel_image_path"])
    ip = bs["initrd_path"]
    try:
        data = open(ip, "rb").read()
        st = os.stat(ip)
        image = open(exp["initrd"], "rb").read()
        ca = open(exp["ca"], "rb").read()
        pad = (4 - len(image) % 4) % 4
        check("initrd", data.startswith(image + b"\0" * pad) and ca in data and b"sluice/ca.pem" in data and
              data.rstrip(b"\0").endswith(b"TRAILER!!!"), ip)
        check("initrd-mode", st.st_uid == 0 and st.st_gid == exp["uid"] and (st.st_mode & 0o777) == 0o640,
              f"{st.st_uid}:{st.st_gid} {oct(st.st_mode & 0o777)}")
    except OSError as e:
        check("initrd", False, str(e))
    check("machine", mc == {"vcpu_count": 1, "mem_size_mib": exp["memory"], "smt": False}, json.dumps(mc))
    check("drives", cfg.get("drives") == [], json.dumps(cfg.get("drives")))
    tap = nets[0]["host_dev_name"] if len(nets) == 1 else ""
    sid = tap[3:]
    check("tap-name", len(nets) == 1 and nets[0]["iface_id"] == "eth0" and len(tap) == 11 and tap.startswith("slh")
          and all(c in "0123456789abcdef" for c in sid), tap)
    try:
        owner = open(f"/sys/class/net/{tap}/owner").read().strip()
        flags = int(open(f"/sys/class/net/{tap}/tun_flags").read().strip(), 16)
        check("tap-owner", owner == str(exp["uid"]) and flags & 0x0002, f"owner {owner} flags {flags:#x}")
    except (OSError, ValueError) as e:
        check("tap-owner", False, str(e))
    check("mac", nets[0].get("guest_mac") == "02:5c:" + ":".join(sid[i:i + 2] for i in (0, 2, 4, 6)),
          nets[0].get("guest_mac", ""))
    args = bs["boot_args"].split(" ")
    kv = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if "=" in a}
    check("boot-base", bs["boot_args"].startswith("console=ttyS0 reboot=k panic=1 "), bs["boot_args"][:40])
    ipbin = next((p for p in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip") if os.path.exists(p)), "ip")
    addrs = os.popen(f"{ipbin} -o addr show dev {tap} 2>/dev/null").read()
    gw4, gw6 = kv.get("sluice.gw4", "-"), kv.get("sluice.gw6", "-")
    ip4, ip6 = kv.get("sluice.ip4", "-"), kv.get("sluice.ip6", "-")
    check("boot-addresses", f" {gw4}/30 " in addrs and f" {gw6}/126 " in addrs and ip4.endswith("/30") and
          ip6.endswith("/126") and ip4.split(".")[:3] == gw4.split(".")[:3], f"{ip4} {gw4} {ip6} {gw6}")
    return out, kv


def vm_main():
    """Validates the config file like `sluice run` must have prepared it, then plays a guest on the console.

    EXPECT_JSON: {"uid", "kernel", "initrd" (the image's), "ca" (a copy of the gateway's ca.pem), "memory", "go" (a file to
    wait for, up to 20 s, before the end)}.  The console (stdout, "\\r\\n" line ends like a guest tty): a
    Firecracker log line, kernel lines, /init's start and ready lines, then for each check "CHECK name ok|bad
    detail", "ARGV" and "ENV NAME=VALUE" (from sluice.cmd and sluice.env.*), then by the command (argv[0]):
      fake-sleep: "SLEEPING", then 60 s;   fake-nostatus: nothing more;   fake-status N: "SLUICE_EXIT N";
      anything else: waits for the go file, then "SLUICE_EXIT 3" and a kernel power-off line.
    """
    exp = json.load(open(sys.argv[2]))
    rest = sys.argv[3:]
    if len(rest) != 3 or rest[0] != "--no-api" or rest[1] != "--config-file":
        print("fake firecracker: bad arguments: " + " ".join(rest), file=sys.stderr)
        sys.exit(2)
    cfg = json.load(open(rest[2]))
    out = sys.stdout
    def say(line):
        out.write(line + "\r\n")
        out.flush()
    say("2024-05-01T10:00:00.000000001 [anonymous-instance:main] Running Firecracker v1.7.0 (fake)")
    say("[    0.000000] Linux version 6.1.0-fake")
    say("sluice-init: start (uptime 0.10)")
    checks, kv = vm_checks(exp, cfg)
    say("sluice-init: ready (uptime 0.20), running the command")
    for name, ok, detail in checks:
        say(f"CHECK {name} {'ok' if ok else 'bad'} {detail}")
    argv = base64.b64decode(kv.get("sluice.cmd", "")).split(b"\0")
    say("ARGV " + json.dumps([a.decode() for a in argv]))
    for k, v in sorted(kv.items()):
        if k.startswith("sluice.env."):
            say(f"ENV {k[len('sluice.env.'):]}={v}")
    say("2024-05-01T10:00:00.500000000 [anonymous-instance:fc_vcpu 0] a Firecracker log line mid-run")
    if argv[0] == b"fake-sleep":
        say("SLEEPING")
        time.sleep(60)
        return
    if argv[0] == b"fake-nostatus":
        return
    if argv[0] == b"fake-status":
        say("SLUICE_EXIT " + argv[1].decode())
        return
    end = time.time() + 20
    while time.time() < end and not os.path.exists(exp["go"]):
        time.sleep(0.05)
    say("SLUICE_EXIT 3")
    say("[    1.234567] reboot: Restarting system")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--vm":
        vm_main()
    else:
        main()
