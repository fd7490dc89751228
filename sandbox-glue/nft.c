/*
 * sandbox-glue/nft.c - a sandbox's nftables table: rendering, applying,
 * removing, finding leftovers, reading its counter (see nft.h).
 *
 * The script is assembled only from validated pieces: names checked against
 * [a-z0-9_]+ inside their fixed arrays, addresses parsed with inet_pton and
 * printed again with inet_ntop, ports as numbers.  Nothing from the plan is
 * copied into the script unchecked, so a hostile plan cannot add a rule.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "common/sluice.h"
#include "sandbox-glue/nft.h"
#include "sandbox-glue/proc.h"

#define STALE_PREFIX "sluice_"
#define STALE_PREFIX_LEN (sizeof(STALE_PREFIX) - 1)
#define STALE_NAME_LEN (STALE_PREFIX_LEN + SANDBOX_ID_LEN)

/* where nft may live: a fixed list, never $PATH (the caller's environment is not trusted) */
static const char *const nft_paths[] = {"/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"};

/* ------------------------------------------------------------------ rendering */

struct out {
	char *buf;
	size_t cap, len;
	int over;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	size_t room;
	int r;

	if (o->over)
		return;
	room = o->cap - o->len;
	va_start(ap, fmt);
	r = vsnprintf(o->buf + o->len, room, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= room) {
		o->over = 1;
		return;
	}
	o->len += (size_t)r;
}

/* 1 when <s>, inside an array of <size> bytes, is NUL-terminated there and is 1+ of [a-z0-9_] */
static int
name_ok(const char *s, size_t size)
{
	size_t len = strnlen(s, size);
	const char *p, *end = s + len;

	if (len == 0 || len == size)
		return 0;
	for (p = s; p < end; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return 0;
	return 1;
}

/* parses <s> (inside an array of <size> bytes) as an <af> address and prints it canonically into <canon> */
static int
addr_canon(int af, const char *s, size_t size, char *canon, size_t canoncap)
{
	unsigned char a[16];

	if (strnlen(s, size) == size || inet_pton(af, s, a) != 1)
		return 0;
	return inet_ntop(af, a, canon, (socklen_t)canoncap) != NULL;
}

static int
finish(struct out *o, int err)
{
	if (err == 0 && o->over)
		err = SLUICE_ETOOBIG;
	if (err != 0) {
		if (o->cap > 0)
			o->buf[0] = '\0';
		return err;
	}
	return (int)o->len;
}

int
nft_render(const struct sandbox_net *n, char *buf, size_t cap)
{
	struct out o = {buf, cap, 0, cap == 0};
	char v4[INET_ADDRSTRLEN], v6[INET6_ADDRSTRLEN], hv4[INET_ADDRSTRLEN], hv6[INET6_ADDRSTRLEN];
	const char *t = n->table, *i = n->host_if;
	unsigned tp = n->transparent_port, dp = n->dns_port;

	if (!name_ok(n->table, sizeof(n->table)) || !name_ok(n->host_if, sizeof(n->host_if)) ||
	    !addr_canon(AF_INET, n->sbx_v4, sizeof(n->sbx_v4), v4, sizeof(v4)) ||
	    !addr_canon(AF_INET6, n->sbx_v6, sizeof(n->sbx_v6), v6, sizeof(v6)) ||
	    !addr_canon(AF_INET, n->host_v4, sizeof(n->host_v4), hv4, sizeof(hv4)) ||
	    !addr_canon(AF_INET6, n->host_v6, sizeof(n->host_v6), hv6, sizeof(hv6)) || tp == 0 || dp == 0 ||
	    tp == 53)
		return finish(&o, SLUICE_EINVAL);

	put(&o, "# sluice sandbox table %s: sandbox %s / %s on %s (host side %s / %s)\n", t, v4, v6, i, hv4, hv6);
	put(&o, "add table inet %s\n", t);
	put(&o, "delete table inet %s\n", t);
	put(&o, "table inet %s {\n", t);
	put(&o, "\tcounter rejected {\n\t}\n\n");

	/* the nat chain sees the first packet of each connection only */
	put(&o, "\tchain prerouting {\n");
	put(&o, "\t\ttype nat hook prerouting priority dstnat; policy accept;\n");
	put(&o, "\t\tiifname \"%s\" udp dport 53 redirect to :%u\n", i, dp);
	/* to the host itself, port 53, where the input chain resets it: reject in prerouting needs a new kernel */
	put(&o, "\t\tiifname \"%s\" tcp dport 53 redirect to :53\n", i);
	put(&o, "\t\tiifname \"%s\" meta l4proto tcp redirect to :%u\n", i, tp);
	put(&o, "\t}\n\n");

	put(&o, "\tchain input {\n");
	put(&o, "\t\ttype filter hook input priority filter; policy accept;\n");
	put(&o, "\t\tiifname != \"%s\" accept\n", i);
	/* a spoofed source is dropped, not answered: a reset would go to whoever owns that address */
	put(&o, "\t\tip saddr != %s counter name \"rejected\" drop\n", v4);
	put(&o, "\t\tip6 saddr != { ::, fe80::/10, %s } counter name \"rejected\" drop\n", v6);
	put(&o, "\t\tct state established,related accept\n");
	put(&o, "\t\ticmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } ip6 hoplimit 255 "
	        "accept\n");
	put(&o, "\t\tip saddr %s tcp dport %u accept\n", v4, tp);
	put(&o, "\t\tip6 saddr %s tcp dport %u accept\n", v6, tp);
	put(&o, "\t\tip saddr %s udp dport %u accept\n", v4, dp);
	put(&o, "\t\tip6 saddr %s udp dport %u accept\n", v6, dp);
	put(&o, "\t\tmeta l4proto tcp counter name \"rejected\" reject with tcp reset\n");
	put(&o, "\t\tcounter name \"rejected\" reject with icmpx type admin-prohibited\n");
	put(&o, "\t}\n\n");

	put(&o, "\tchain forward {\n");
	put(&o, "\t\ttype filter hook forward priority filter; policy accept;\n");
	put(&o, "\t\tiifname \"%s\" drop\n", i);
	put(&o, "\t\toifname \"%s\" drop\n", i);
	put(&o, "\t}\n");
	put(&o, "}\n");
	return finish(&o, 0);
}

int
nft_render_delete(const struct sandbox_net *n, char *buf, size_t cap)
{
	struct out o = {buf, cap, 0, cap == 0};

	if (!name_ok(n->table, sizeof(n->table)))
		return finish(&o, SLUICE_EINVAL);
	put(&o, "add table inet %s\n", n->table);
	put(&o, "delete table inet %s\n", n->table);
	return finish(&o, 0);
}

/* ------------------------------------------------------------------ parsers of nft's output */

static int
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* the next whitespace-separated word of [*p, end): sets <w>/<wlen>, returns 0 at the end of the line */
static int
word(const char **p, const char *end, const char **w, size_t *wlen)
{
	const char *s = *p;

	while (s < end && is_blank(*s))
		s++;
	*w = s;
	while (s < end && !is_blank(*s))
		s++;
	*wlen = (size_t)(s - *w);
	*p = s;
	return *wlen > 0;
}

static int
word_is(const char *w, size_t wlen, const char *lit)
{
	return wlen == strlen(lit) && memcmp(w, lit, wlen) == 0;
}

static int
stale_name(const char *w, size_t wlen)
{
	return wlen == STALE_NAME_LEN && memcmp(w, STALE_PREFIX, STALE_PREFIX_LEN) == 0 &&
	       proc_hex_lower(w + STALE_PREFIX_LEN, SANDBOX_ID_LEN);
}

int
nft_stale_tables(const char *list_output, char names[][NFT_TABLE_NAME_MAX], size_t max, size_t *n)
{
	const char *p = list_output, *end, *w;
	size_t wlen, found = 0;

	*n = 0;
	while (*p != '\0') {
		const char *name;
		size_t namelen;

		end = strchr(p, '\n');
		if (end == NULL)
			end = p + strlen(p);
		/* exactly: "table" "inet" NAME, nothing after */
		if (word(&p, end, &w, &wlen) && word_is(w, wlen, "table") && word(&p, end, &w, &wlen) &&
		    word_is(w, wlen, "inet") && word(&p, end, &name, &namelen) && stale_name(name, namelen) &&
		    !word(&p, end, &w, &wlen)) {
			if (found == max) {
				*n = found;
				return SLUICE_ETOOBIG;
			}
			memcpy(names[found], name, namelen);
			names[found][namelen] = '\0';
			found++;
		}
		p = *end == '\n' ? end + 1 : end;
	}
	*n = found;
	return 0;
}

/* a decimal uint64 that is the whole word */
static int
u64_word(const char *w, size_t wlen, uint64_t *v)
{
	uint64_t r = 0;
	size_t k;

	if (wlen == 0 || wlen > 20)
		return 0;
	for (k = 0; k < wlen; k++) {
		unsigned d;

		if (w[k] < '0' || w[k] > '9')
			return 0;
		d = (unsigned)(w[k] - '0');
		if (r > (UINT64_MAX - d) / 10)
			return 0;
		r = r * 10 + d;
	}
	*v = r;
	return 1;
}

int
nft_counter_parse(const char *list_output, uint64_t *packets, uint64_t *bytes)
{
	const char *p = list_output, *end, *w;
	size_t wlen;
	uint64_t pk, by;

	while (*p != '\0') {
		end = strchr(p, '\n');
		if (end == NULL)
			end = p + strlen(p);
		if (word(&p, end, &w, &wlen) && word_is(w, wlen, "packets")) {
			if (word(&p, end, &w, &wlen) && u64_word(w, wlen, &pk) && word(&p, end, &w, &wlen) &&
			    word_is(w, wlen, "bytes") && word(&p, end, &w, &wlen) && u64_word(w, wlen, &by) &&
			    !word(&p, end, &w, &wlen)) {
				*packets = pk;
				*bytes = by;
				return 0;
			}
			return SLUICE_EPARSE;
		}
		p = *end == '\n' ? end + 1 : end;
	}
	return SLUICE_EPARSE;
}

/* ------------------------------------------------------------------ running nft */

static int
run_nft(const char *const args[], const char *in, char *out, size_t outcap, char *err, size_t errcap)
{
	return proc_run(nft_paths, sizeof(nft_paths) / sizeof(nft_paths[0]), args, -1, in, out, outcap, err, errcap);
}

int
nft_apply(const char *script, char *err, size_t errcap)
{
	static const char *const args[] = {"-f", "-", NULL};

	return run_nft(args, script, NULL, 0, err, errcap);
}

int
nft_check(const char *script, char *err, size_t errcap)
{
	static const char *const args[] = {"-c", "-f", "-", NULL};

	return run_nft(args, script, NULL, 0, err, errcap);
}

int
nft_list_tables(char *out, size_t cap, char *err, size_t errcap)
{
	static const char *const args[] = {"list", "tables", NULL};

	return run_nft(args, "", out, cap, err, errcap);
}

int
nft_rejected_read(const char *table, uint64_t *packets, uint64_t *bytes, char *err, size_t errcap)
{
	const char *args[] = {"list", "counter", "inet", table, "rejected", NULL};
	char out[1024];
	int ret;

	if (!name_ok(table, NFT_TABLE_NAME_MAX)) {
		proc_err_set(err, errcap, "bad table name");
		return SLUICE_EINVAL;
	}
	ret = run_nft(args, "", out, sizeof(out), err, errcap);
	if (ret != 0)
		return ret == SLUICE_ETOOBIG ? SLUICE_EPARSE : ret;
	ret = nft_counter_parse(out, packets, bytes);
	if (ret != 0)
		proc_err_set(err, errcap, "no packets/bytes line in nft's counter listing");
	return ret;
}
