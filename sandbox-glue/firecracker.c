/*
 * sandbox-glue/firecracker.c - Firecracker's config file and API driver.
 *
 * JSON is produced with jansson so that quotes, backslashes and non-ASCII in
 * paths are escaped correctly; strings with control bytes are refused before
 * that, because a newline in a path or in the kernel command line is never
 * what an operator meant and a kernel command line cannot carry one.
 *
 * The API answers come from the Firecracker process: a strict, bounded
 * parser (fc_response_parse) reads them, and the driver polls with one
 * deadline for the whole boot sequence.
 */
#include "common/clock.h"
#include "sandbox-glue/firecracker.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/sluice.h"

#define TAP_NAME_MAX 15       /* IFNAMSIZ - 1 */
#define REQUEST_HEAD_MAX 256  /* our own request line and headers */
#define CONNECT_RETRY_MS 10   /* while the socket does not exist yet or its backlog is full */
#define ERRMSG_MAX 512        /* the fault_message kept for one error line */

/* ------------------------------------------------------------------ validation */

/* 1 when <s>/<n> is valid UTF-8 (no overlongs, surrogates or code points above U+10FFFF). */
static int
utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0, k, need;
	uint32_t cp, min;

	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0)
			need = 1, cp = s[i] & 0x1f, min = 0x80;
		else if ((s[i] & 0xf0) == 0xe0)
			need = 2, cp = s[i] & 0x0f, min = 0x800;
		else if ((s[i] & 0xf8) == 0xf0)
			need = 3, cp = s[i] & 0x07, min = 0x10000;
		else
			return 0;
		if (n - i - 1 < need)
			return 0;
		for (k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += need + 1;
	}
	return 1;
}

/* 0 when <s> is 1..<max> bytes of UTF-8 without control bytes; else SLUICE_EINVAL / SLUICE_ETOOBIG. */
static int
text_check(const char *s, size_t max, int allow_empty)
{
	size_t n, i;

	if (s == NULL)
		return SLUICE_EINVAL;
	n = strnlen(s, max + 1);
	if (n > max)
		return SLUICE_ETOOBIG;
	if (n == 0 && !allow_empty)
		return SLUICE_EINVAL;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
			return SLUICE_EINVAL;
	return utf8_valid((const unsigned char *)s, n) ? 0 : SLUICE_EINVAL;
}

static int
tap_valid(const char *t)
{
	size_t i, n;

	if (t == NULL)
		return 0;
	n = strnlen(t, TAP_NAME_MAX + 1);
	if (n == 0 || n > TAP_NAME_MAX || strcmp(t, ".") == 0 || strcmp(t, "..") == 0)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

/* "xx:xx:xx:xx:xx:xx", unicast (a multicast address would never receive the guest's own frames). */
static int
mac_valid(const char *m)
{
	size_t i;

	if (strnlen(m, FC_MAC_LEN + 1) != FC_MAC_LEN)
		return 0;
	for (i = 0; i < FC_MAC_LEN; i++) {
		if (i % 3 == 2) {
			if (m[i] != ':')
				return 0;
		} else if (sluice_hexval((unsigned char)m[i]) < 0) {
			return 0;
		}
	}
	return (sluice_hexval((unsigned char)m[1]) & 1) == 0;
}

int
fc_boot_args_build(const struct fc_vm *vm, char *buf, size_t cap)
{
	const char *extra = vm->boot_args != NULL ? vm->boot_args : "";
	size_t base = sizeof(FC_BOOT_ARGS_BASE) - 1, n;
	int ret;

	ret = text_check(extra, FC_BOOT_ARGS_MAX, 1);
	if (ret < 0)
		return ret;
	n = strlen(extra);
	if (base + (n ? 1 + n : 0) > FC_BOOT_ARGS_MAX)
		return SLUICE_ETOOBIG;
	if (base + (n ? 1 + n : 0) + 1 > cap)
		return SLUICE_ETOOBIG;
	memcpy(buf, FC_BOOT_ARGS_BASE, base);
	if (n) {
		buf[base] = ' ';
		memcpy(buf + base + 1, extra, n);
		base += 1 + n;
	}
	buf[base] = '\0';
	return (int)base;
}

int
fc_vm_check(const struct fc_vm *vm, const char **why)
{
	char args[FC_BOOT_ARGS_MAX + 1];
	const char *w = NULL;
	int ret;

	if (vm == NULL) {
		w = "no vm";
		ret = SLUICE_EINVAL;
		goto out;
	}
	if ((ret = text_check(vm->kernel, FC_PATH_MAX, 0)) < 0) {
		w = "kernel path missing, too long, or with control bytes";
		goto out;
	}
	if ((ret = text_check(vm->initrd, FC_PATH_MAX, 0)) < 0) {
		w = "initrd path missing, too long, or with control bytes";
		goto out;
	}
	if ((ret = fc_boot_args_build(vm, args, sizeof(args))) < 0) {
		w = ret == SLUICE_ETOOBIG ? "boot args longer than Firecracker's command line allows"
		                          : "boot args with control bytes or invalid UTF-8";
		goto out;
	}
	ret = SLUICE_EINVAL;
	if (vm->vcpus < 1 || vm->vcpus > FC_VCPUS_MAX) {
		w = "vcpus out of range";
		goto out;
	}
	if (vm->mem_mib < 1 || vm->mem_mib > FC_MEM_MAX_MIB) {
		w = "memory out of range";
		goto out;
	}
	if (!tap_valid(vm->tap)) {
		w = "tap name missing or invalid";
		goto out;
	}
	if (vm->guest_mac != NULL && !mac_valid(vm->guest_mac)) {
		w = "guest MAC invalid";
		goto out;
	}
	ret = 0;
out:
	if (why != NULL)
		*why = w;
	return ret;
}

int
fc_guest_mac(const char *id, char mac[FC_MAC_LEN + 1])
{
	size_t i;

	if (id == NULL || strnlen(id, 9) != 8)
		return SLUICE_EINVAL;
	for (i = 0; i < 8; i++)
		if (sluice_hexval((unsigned char)id[i]) < 0)
			return SLUICE_EINVAL;
	snprintf(mac, FC_MAC_LEN + 1, "02:5c:%.2s:%.2s:%.2s:%.2s", id, id + 2, id + 4, id + 6);
	for (i = 0; i < FC_MAC_LEN; i++)
		if (mac[i] >= 'A' && mac[i] <= 'F')
			mac[i] = (char)(mac[i] - 'A' + 'a');
	return 0;
}

/* ------------------------------------------------------------------ JSON */

/* The three sections; NULL on allocation failure (inputs were checked). */
static json_t *
boot_source_json(const struct fc_vm *vm, const char *args)
{
	json_t *o = json_object();

	if (o == NULL || json_object_set_new(o, "kernel_image_path", json_string(vm->kernel)) == -1 ||
	    json_object_set_new(o, "initrd_path", json_string(vm->initrd)) == -1 ||
	    json_object_set_new(o, "boot_args", json_string(args)) == -1) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *
machine_json(const struct fc_vm *vm)
{
	json_t *o = json_object();

	if (o == NULL || json_object_set_new(o, "vcpu_count", json_integer(vm->vcpus)) == -1 ||
	    json_object_set_new(o, "mem_size_mib", json_integer(vm->mem_mib)) == -1 ||
	    json_object_set_new(o, "smt", json_false()) == -1) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *
net_json(const struct fc_vm *vm)
{
	json_t *o = json_object();

	if (o == NULL || json_object_set_new(o, "iface_id", json_string("eth0")) == -1 ||
	    (vm->guest_mac != NULL && json_object_set_new(o, "guest_mac", json_string(vm->guest_mac)) == -1) ||
	    json_object_set_new(o, "host_dev_name", json_string(vm->tap)) == -1) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int
fc_config_render(const struct fc_vm *vm, char *buf, size_t cap)
{
	char args[FC_BOOT_ARGS_MAX + 1];
	json_t *root = NULL, *nets = NULL;
	size_t n;
	int ret;

	if (cap > 0)
		buf[0] = '\0';
	if ((ret = fc_vm_check(vm, NULL)) < 0)
		return ret == SLUICE_ETOOBIG ? SLUICE_EINVAL : ret;
	if ((ret = fc_boot_args_build(vm, args, sizeof(args))) < 0)
		return SLUICE_EINVAL;
	ret = SLUICE_ENOMEM;
	root = json_object();
	nets = json_array();
	if (root == NULL || nets == NULL || json_array_append_new(nets, net_json(vm)) == -1)
		goto out;
	if (json_object_set_new(root, "boot-source", boot_source_json(vm, args)) == -1 ||
	    json_object_set_new(root, "drives", json_array()) == -1 ||
	    json_object_set_new(root, "machine-config", machine_json(vm)) == -1 ||
	    json_object_set(root, "network-interfaces", nets) == -1)
		goto out;
	n = json_dumpb(root, buf, cap, JSON_INDENT(2) | JSON_ENSURE_ASCII);
	if (n == 0)
		goto out;
	if (n + 2 > cap || n > INT32_MAX) {
		if (cap > 0)
			buf[0] = '\0';
		ret = SLUICE_ETOOBIG;
		goto out;
	}
	buf[n] = '\n';
	buf[n + 1] = '\0';
	ret = (int)(n + 1);
out:
	json_decref(nets);
	json_decref(root);
	return ret;
}

/* ------------------------------------------------------------------ response parser */

static int
is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* A field-value or reason byte: HTAB, SP, VCHAR, obs-text. */
static int
is_vbyte(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/*
 * Finds the line starting at <pos>: sets *<eol> to the index of its CR.
 * Returns 1, -2 (need more), or -1 (bare LF, a CR not before LF is caught by
 * the callers' byte checks, or the head bound reached).
 */
static int
next_line(const char *buf, size_t len, size_t pos, size_t *eol, const char **err)
{
	size_t lim = len < FC_RESPONSE_HEAD_MAX ? len : FC_RESPONSE_HEAD_MAX, i;

	for (i = pos; i < lim; i++) {
		if (buf[i] != '\n')
			continue;
		if (i == pos || buf[i - 1] != '\r') {
			*err = "bare LF";
			return -1;
		}
		*eol = i - 1;
		return 1;
	}
	if (len >= FC_RESPONSE_HEAD_MAX) {
		*err = "response head too long";
		return -1;
	}
	return -2;
}

static int
parse_status(const char *buf, size_t eol, struct fc_response *r, const char **err)
{
	size_t i;

	if (eol < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || (buf[7] != '0' && buf[7] != '1') || buf[8] != ' ' ||
	    buf[9] < '1' || buf[9] > '5' || buf[10] < '0' || buf[10] > '9' || buf[11] < '0' || buf[11] > '9') {
		*err = "bad status line";
		return -1;
	}
	if (eol > 12 && buf[12] != ' ') {
		*err = "bad status line";
		return -1;
	}
	for (i = 13; i < eol; i++) {
		if (!is_vbyte((unsigned char)buf[i])) {
			*err = "control byte in the reason phrase";
			return -1;
		}
	}
	r->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	if (r->status < 200) {
		*err = "unexpected 1xx answer";
		return -1;
	}
	return 0;
}

/* One header line <buf>[<pos>, <eol>). Updates the Content-Length state. */
static int
parse_header(const char *buf, size_t pos, size_t eol, struct fc_response *r, int *have_cl, const char **err)
{
	size_t i = pos, name_end, vs, ve;
	unsigned long long cl = 0;

	if (buf[i] == ' ' || buf[i] == '\t') {
		*err = "obsolete line folding";
		return -1;
	}
	while (i < eol && is_tchar((unsigned char)buf[i]))
		i++;
	if (i == pos || i == eol || buf[i] != ':') {
		*err = "bad header name";
		return -1;
	}
	name_end = i++;
	for (vs = i; vs < eol; vs++)
		if (!is_vbyte((unsigned char)buf[vs])) {
			*err = "control byte in a header value";
			return -1;
		}
	vs = i;
	while (vs < eol && (buf[vs] == ' ' || buf[vs] == '\t'))
		vs++;
	ve = eol;
	while (ve > vs && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'))
		ve--;
	if (sluice_iov_ieq(buf + pos, name_end - pos, "transfer-encoding")) {
		*err = "Transfer-Encoding refused";
		return -1;
	}
	if (sluice_iov_ieq(buf + pos, name_end - pos, "connection")) {
		if (sluice_iov_ieq(buf + vs, ve - vs, "close"))
			r->close = 1;
		return 0;
	}
	if (!sluice_iov_ieq(buf + pos, name_end - pos, "content-length"))
		return 0;
	if (*have_cl) {
		*err = "duplicate Content-Length";
		return -1;
	}
	if (vs == ve) {
		*err = "empty Content-Length";
		return -1;
	}
	for (i = vs; i < ve; i++) {
		if (buf[i] < '0' || buf[i] > '9') {
			*err = "bad Content-Length";
			return -1;
		}
		cl = cl * 10 + (unsigned)(buf[i] - '0');
		if (cl > FC_RESPONSE_BODY_MAX) {
			*err = "Content-Length over the body bound";
			return -1;
		}
	}
	*have_cl = 1;
	r->body_len = (size_t)cl;
	return 0;
}

int
fc_response_parse(const char *buf, size_t len, struct fc_response *r, const char **err)
{
	const char *e = NULL;
	size_t pos, eol;
	int have_cl = 0, nheaders = 0, ret;

	if (err == NULL)
		err = &e;
	*err = NULL;
	memset(r, 0, sizeof(*r));
	if ((ret = next_line(buf, len, 0, &eol, err)) != 1)
		return ret;
	if (parse_status(buf, eol, r, err) < 0)
		return -1;
	pos = eol + 2;
	for (;;) {
		if ((ret = next_line(buf, len, pos, &eol, err)) != 1)
			return ret;
		if (eol == pos)
			break;
		if (++nheaders > FC_RESPONSE_HEADERS_MAX) {
			*err = "too many headers";
			return -1;
		}
		if (parse_header(buf, pos, eol, r, &have_cl, err) < 0)
			return -1;
		pos = eol + 2;
	}
	r->body_off = eol + 2;
	if (r->status == 204 || r->status == 304) {
		if (r->body_len != 0) {
			*err = "a body on a 204/304 answer";
			return -1;
		}
	} else if (!have_cl) {
		*err = "no Content-Length";
		return -1;
	}
	if (len - r->body_off < r->body_len)
		return -2;
	return (int)(r->body_off + r->body_len);
}

static void
sanitise(char *out, size_t cap, const char *in, size_t n)
{
	size_t i;

	if (cap == 0)
		return;
	if (n > cap - 1)
		n = cap - 1;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		out[i] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
	}
	out[n] = '\0';
}

int
fc_response_fault(const char *body, size_t len, char *out, size_t cap)
{
	json_t *root, *msg;
	json_error_t jerr;
	int ret = SLUICE_EPARSE;

	if (len > FC_RESPONSE_BODY_MAX)
		len = FC_RESPONSE_BODY_MAX;
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	msg = json_is_object(root) ? json_object_get(root, "fault_message") : NULL;
	if (json_is_string(msg)) {
		sanitise(out, cap, json_string_value(msg), json_string_length(msg));
		ret = 0;
	} else {
		sanitise(out, cap, body, len);
	}
	json_decref(root);
	return ret;
}

/* ------------------------------------------------------------------ driver */

struct api {
	int fd;
	const char *path;
	struct timespec deadline;
	char *err;
	size_t errcap;
	char *in; /* FC_RESPONSE_HEAD_MAX + FC_RESPONSE_BODY_MAX */
	size_t inlen;
};

#define API_IN_CAP (FC_RESPONSE_HEAD_MAX + FC_RESPONSE_BODY_MAX)

__attribute__((format(printf, 2, 3))) static void
errf(struct api *a, const char *fmt, ...)
{
	va_list ap;

	if (a->errcap == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(a->err, a->errcap, fmt, ap);
	va_end(ap);
}

/* Milliseconds left before the deadline, 0 when it has passed. */
static int
left_ms(const struct api *a)
{
	struct timespec now;
	long long ms;

	clock_mono(&now);
	ms = (long long)(a->deadline.tv_sec - now.tv_sec) * 1000 + (a->deadline.tv_nsec - now.tv_nsec) / 1000000;
	if (ms <= 0)
		return 0;
	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* Waits for <events> on the socket. 0, SLUICE_ETIMEDOUT or SLUICE_EIO. */
static int
wait_fd(struct api *a, short events)
{
	struct pollfd p = {.fd = a->fd, .events = events};
	int ms, n;

	for (;;) {
		if ((ms = left_ms(a)) == 0)
			return SLUICE_ETIMEDOUT;
		n = poll(&p, 1, ms);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return SLUICE_EIO;
		if (n == 0)
			return SLUICE_ETIMEDOUT;
		return 0;
	}
}

/*
 * Connects, retrying every CONNECT_RETRY_MS while the socket is not there
 * yet (Firecracker creates it a moment after it starts) or its backlog is
 * full, until the deadline.
 */
static int
api_connect(struct api *a)
{
	struct sockaddr_un sa;
	int ms, e = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, a->path, strlen(a->path));
	for (;;) {
		a->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (a->fd == -1) {
			errf(a, "socket: %s", strerror(errno));
			return SLUICE_EIO;
		}
		if (connect(a->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return 0;
		e = errno;
		close(a->fd);
		a->fd = -1;
		if (e != ENOENT && e != ECONNREFUSED && e != EAGAIN && e != EINTR) {
			errf(a, "connect %s: %s", a->path, strerror(e));
			return SLUICE_EIO;
		}
		if ((ms = left_ms(a)) == 0)
			break;
		poll(NULL, 0, ms < CONNECT_RETRY_MS ? ms : CONNECT_RETRY_MS);
	}
	errf(a, "connect %s: timed out (%s)", a->path, strerror(e));
	return SLUICE_ETIMEDOUT;
}

static int
send_all(struct api *a, const char *what, const char *p, size_t n)
{
	ssize_t w;
	int ret;

	while (n > 0) {
		w = send(a->fd, p, n, MSG_NOSIGNAL);
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if ((ret = wait_fd(a, POLLOUT)) < 0) {
				errf(a, "%s: %s while sending", what, ret == SLUICE_ETIMEDOUT ? "timed out" : "poll failed");
				return ret;
			}
			continue;
		}
		if (w == -1) {
			errf(a, "%s: send: %s", what, strerror(errno));
			return (errno == EPIPE || errno == ECONNRESET) ? SLUICE_ECLOSED : SLUICE_EIO;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads one whole answer into a->in; *<r> describes it. */
static int
read_answer(struct api *a, const char *what, struct fc_response *r)
{
	const char *perr = NULL;
	ssize_t got;
	int n, ret;

	a->inlen = 0;
	for (;;) {
		n = fc_response_parse(a->in, a->inlen, r, &perr);
		if (n > 0) {
			if ((size_t)n != a->inlen) {
				errf(a, "%s: unexpected bytes after the answer", what);
				return SLUICE_EPARSE;
			}
			return 0;
		}
		if (n == -1) {
			errf(a, "%s: bad answer: %s", what, perr != NULL ? perr : "malformed");
			return SLUICE_EPARSE;
		}
		if (a->inlen == API_IN_CAP) { /* unreachable: the parser bounds head and body */
			errf(a, "%s: answer too long", what);
			return SLUICE_EPARSE;
		}
		if ((ret = wait_fd(a, POLLIN)) < 0) {
			errf(a, "%s: %s waiting for the answer", what,
			     ret == SLUICE_ETIMEDOUT ? "timed out" : "poll failed");
			return ret;
		}
		got = recv(a->fd, a->in + a->inlen, API_IN_CAP - a->inlen, 0);
		if (got == -1 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (got == -1) {
			errf(a, "%s: recv: %s", what, strerror(errno));
			return errno == ECONNRESET ? SLUICE_ECLOSED : SLUICE_EIO;
		}
		if (got == 0) {
			errf(a, "%s: the API socket closed before a whole answer", what);
			return SLUICE_ECLOSED;
		}
		a->inlen += (size_t)got;
	}
}

/* PUT <path> with JSON <body> (taken: freed here), then its answer, which must be 2xx. */
static int
api_put(struct api *a, const char *path, json_t *body)
{
	char what[64], head[REQUEST_HEAD_MAX], fault[ERRMSG_MAX];
	struct fc_response r;
	char *js = NULL, *req = NULL;
	size_t jl, hl;
	int n, ret = SLUICE_ENOMEM;

	snprintf(what, sizeof(what), "PUT %s", path);
	if (body == NULL || (js = json_dumps(body, JSON_COMPACT | JSON_ENSURE_ASCII)) == NULL) {
		errf(a, "%s: out of memory", what);
		goto out;
	}
	jl = strlen(js);
	n = snprintf(head, sizeof(head),
	             "PUT %s HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
	             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
	             path, jl);
	if (n < 0 || (size_t)n >= sizeof(head)) {
		errf(a, "%s: request head too long", what);
		ret = SLUICE_ETOOBIG;
		goto out;
	}
	hl = (size_t)n;
	req = xmalloc(hl + jl);
	memcpy(req, head, hl);
	memcpy(req + hl, js, jl);
	if (a->fd == -1 && (ret = api_connect(a)) < 0)
		goto out;
	if ((ret = send_all(a, what, req, hl + jl)) < 0)
		goto out;
	if ((ret = read_answer(a, what, &r)) < 0)
		goto out;
	if (r.status < 200 || r.status > 299) {
		if (r.body_len == 0)
			errf(a, "%s: %d (no body)", what, r.status);
		else {
			fc_response_fault(a->in + r.body_off, r.body_len, fault, sizeof(fault));
			errf(a, "%s: %d: %s", what, r.status, fault);
		}
		ret = SLUICE_EDENIED;
		goto out;
	}
	if (r.close) {
		close(a->fd);
		a->fd = -1;
	}
	ret = 0;
out:
	free(req);
	free(js);
	json_decref(body);
	return ret;
}

int
fc_api_boot(const char *sock_path, const struct fc_vm *vm, int timeout_ms, char *err, size_t errcap)
{
	struct api a = {.fd = -1, .path = sock_path, .err = err, .errcap = errcap};
	char args[FC_BOOT_ARGS_MAX + 1];
	const char *why = NULL;
	int ret;

	if (errcap > 0)
		err[0] = '\0';
	if ((ret = fc_vm_check(vm, &why)) < 0) {
		errf(&a, "vm refused: %s", why);
		return SLUICE_EINVAL;
	}
	if (sock_path == NULL || sock_path[0] == '\0' || strlen(sock_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		errf(&a, "API socket path missing or longer than a Unix socket address allows");
		return SLUICE_EINVAL;
	}
	if (timeout_ms <= 0) {
		errf(&a, "timeout must be positive");
		return SLUICE_EINVAL;
	}
	if (fc_boot_args_build(vm, args, sizeof(args)) < 0) /* checked above; kept for the path's sake */
		return SLUICE_EINVAL;
	clock_mono(&a.deadline);
	a.deadline.tv_sec += timeout_ms / 1000;
	a.deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (a.deadline.tv_nsec >= 1000000000) {
		a.deadline.tv_sec++;
		a.deadline.tv_nsec -= 1000000000;
	}
	a.in = xmalloc(API_IN_CAP);
	if ((ret = api_put(&a, "/boot-source", boot_source_json(vm, args))) < 0 ||
	    (ret = api_put(&a, "/machine-config", machine_json(vm))) < 0 ||
	    (ret = api_put(&a, "/network-interfaces/eth0", net_json(vm))) < 0 ||
	    (ret = api_put(&a, "/actions", json_pack("{s:s}", "action_type", "InstanceStart"))) < 0)
		goto out;
	ret = 0;
out:
	if (a.fd != -1)
		close(a.fd);
	free(a.in);
	return ret;
}
