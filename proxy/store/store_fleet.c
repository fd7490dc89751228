/*
 * proxy/store/store_fleet.c - the fleet client of approvals (fleet.h), on
 * the main thread's event base: a command store (store_raw) and a
 * subscriber store (store_create_sub), both with the store's handshake,
 * timeouts and backoff.
 *
 * Every FLEET_TICK_MS: the heartbeat; our holds sent again after a
 * reconnect; the decision keys of our holds read (a PUBLISH missed while
 * the subscriber reconnected is found there); the listing refreshed in
 * three steps (ZRANGEBYSCORE of the index, MGET of the records, MGET of
 * their gateways' heartbeats), one refresh in flight at a time.  A failed
 * step empties the listing: what cannot be read is not shown as pending.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/store/fleet.h"
#include "secrets/secrets.h"
#include "store_int.h"

#define KEYBUF (STORE_PREFIX_MAX + FLEET_GW_MAX + 32)
#define MGET_CHUNK 1000                 /* keys per MGET (STORE_RAW_ARGS_MAX) */
#define LOG_INTERVAL_S STORE_LOG_INTERVAL_S

enum rstate {
	R_PENDING = 1,
	R_EXPIRED = 2,
	R_GONE = 3,
	R_UNVERIFIED = 4,
};

struct pub {                            /* one of our holds, published */
	char id[FLEET_ID_LEN + 1];
	char *rec;
	size_t len;
	int64_t expiry_ms;
	int seen;
};

struct remote {                         /* one hold of the listing */
	char id[FLEET_ID_LEN + 1];
	enum rstate state;
	char *rec;                          /* the sealed record as read (NULL when unverified) */
	size_t len;
	struct fleet_hold h;                /* opened from <rec> */
};

struct refresh {                        /* a listing being read */
	struct fleet *f;
	size_t n;
	struct remote *r;                   /* <n> entries; ids set, then records */
	size_t ngw;
	char (*gw)[FLEET_GW_MAX + 1];       /* distinct gateways of the records */
};

struct fleet {
	struct event_base *base;
	struct store *cmd, *sub;
	char gw[FLEET_GW_MAX + 1];
	struct secret_buf *key;
	fleet_decision_fn *on_decision;
	fleet_decided_fn *on_decided;
	void *arg;
	struct event *tick;
	uint64_t conn_seen;
	struct pub *pubs;
	size_t npubs, cappubs;
	struct remote *list;
	size_t nlist;
	int refreshing;
	int destroying;
	time_t last_log[4];
	char scratch[FLEET_REC_MAX + 1];
};

struct pending_dec {                    /* a decision of ours waiting for its SET NX */
	struct fleet *f;
	int approve;
	char by[FLEET_WHO_MAX];
	char *hold;                         /* the hold's sealed record, to audit */
	size_t hold_len;
	char *rec;                          /* the sealed decision, PUBLISHed once taken */
	size_t len;
	char gw[FLEET_GW_MAX + 1];          /* the holding gateway */
	fleet_decide_done *done;
	void *done_arg;
};

static int
may_log(struct fleet *f, int kind)
{
	time_t now = time(NULL);

	if (f->last_log[kind] != 0 && now - f->last_log[kind] < LOG_INTERVAL_S)
		return 0;
	f->last_log[kind] = now;
	return 1;
}

/* <prefix><what><name> into <out> (KEYBUF): its length. */
static size_t
key_of(const struct fleet *f, char *out, const char *what, const char *name)
{
	int n = snprintf(out, KEYBUF, "%s%s%s", store_prefix(f->cmd), what, name);

	return n > 0 && n < KEYBUF ? (size_t)n : 0;
}

static void
cmd(struct fleet *f, int argc, const char **argv, const size_t *argl, store_raw_cb *cb, void *arg)
{
	if (store_raw(f->cmd, argc, argv, argl, cb, arg) != 0 && cb != NULL)
		cb(NULL, STORE_EDOWN, arg);
}

/*
 * MGET of <p><what><name> for <n> names, the i-th at <names> + i * <stride> (NUL-terminated), in one command
 * (n <= MGET_CHUNK): the reply to <cb>.
 */
static void
mget(struct fleet *f, const char *what, const char *names, size_t stride, size_t n, store_raw_cb *cb, void *arg)
{
	const char **argv = xcalloc(n + 1, sizeof(*argv));
	size_t *argl = xcalloc(n + 1, sizeof(*argl)), i;
	char (*keys)[KEYBUF] = xcalloc(n > 0 ? n : 1, sizeof(*keys));

	argv[0] = "MGET";
	argl[0] = 4;
	for (i = 0; i < n; i++) {
		argl[i + 1] = key_of(f, keys[i], what, names + i * stride);
		argv[i + 1] = keys[i];
	}
	cmd(f, (int)n + 1, argv, argl, cb, arg);
	free(argv);
	free(argl);
	free(keys);
}

/* ---- our holds ---- */

static void
send_pub(struct fleet *f, const struct pub *p)
{
	char k[KEYBUF], idx[KEYBUF], ttl[24], score[24];
	int64_t left = p->expiry_ms - (int64_t)clock_wall_ms() + FLEET_TTL_GRACE_MS;
	const char *argv[5];
	size_t argl[5];

	argv[0] = "SET";
	argl[0] = 3;
	argv[1] = k;
	argl[1] = key_of(f, k, "ap:h:", p->id);
	argv[2] = p->rec;
	argl[2] = p->len;
	argv[3] = "PX";
	argl[3] = 2;
	argl[4] = (size_t)snprintf(ttl, sizeof(ttl), "%lld", (long long)(left > 1000 ? left : 1000));
	argv[4] = ttl;
	cmd(f, 5, argv, argl, NULL, NULL);
	argv[0] = "ZADD";
	argl[0] = 4;
	argv[1] = idx;
	argl[1] = key_of(f, idx, "ap:idx", "");
	argl[2] = (size_t)snprintf(score, sizeof(score), "%lld", (long long)p->expiry_ms);
	argv[2] = score;
	argv[3] = p->id;
	argl[3] = FLEET_ID_LEN;
	cmd(f, 4, argv, argl, NULL, NULL);
}

static void
send_withdraw(struct fleet *f, const char *id)
{
	char k[KEYBUF], idx[KEYBUF];
	const char *argv[3] = {"DEL", k, NULL};
	size_t argl[3] = {3, key_of(f, k, "ap:h:", id), 0};

	cmd(f, 2, argv, argl, NULL, NULL);
	argv[0] = "ZREM";
	argl[0] = 4;
	argv[1] = idx;
	argl[1] = key_of(f, idx, "ap:idx", "");
	argv[2] = id;
	argl[2] = FLEET_ID_LEN;
	cmd(f, 3, argv, argl, NULL, NULL);
}

void
fleet_sync_begin(struct fleet *f)
{
	size_t i;

	for (i = 0; i < f->npubs; i++)
		f->pubs[i].seen = 0;
}

void
fleet_sync_hold(struct fleet *f, const struct fleet_hold *h)
{
	struct pub *p;
	size_t i;
	long n;

	for (i = 0; i < f->npubs; i++)
		if (memcmp(f->pubs[i].id, h->id, FLEET_ID_LEN + 1) == 0) {
			f->pubs[i].seen = 1;
			return;
		}
	n = fleet_hold_seal(h, f->key->p, f->key->len, f->scratch, sizeof(f->scratch));
	if (n < 0) {
		if (may_log(f, 0))
			log_warnx("fleet: hold %s is not published (%s): it can be decided on this gateway only", h->id,
			          n == FLEET_ETOOBIG ? "its record is over 64 KiB" : "a field out of bounds");
		return;
	}
	if (f->npubs == f->cappubs) {
		f->cappubs = f->cappubs ? 2 * f->cappubs : 16;
		f->pubs = xrealloc(f->pubs, f->cappubs * sizeof(*f->pubs));
	}
	p = &f->pubs[f->npubs++];
	memcpy(p->id, h->id, FLEET_ID_LEN + 1);
	p->rec = xmalloc((size_t)n);
	memcpy(p->rec, f->scratch, (size_t)n);
	p->len = (size_t)n;
	p->expiry_ms = h->expiry_ms;
	p->seen = 1;
	send_pub(f, p);
}

void
fleet_sync_end(struct fleet *f)
{
	size_t i = 0;

	while (i < f->npubs) {
		if (f->pubs[i].seen) {
			i++;
			continue;
		}
		send_withdraw(f, f->pubs[i].id);
		free(f->pubs[i].rec);
		f->pubs[i] = f->pubs[--f->npubs];
	}
}

/* ---- decisions for our holds ---- */

static void
decision_in(struct fleet *f, const char *rec, size_t len)
{
	struct fleet_decision d;
	char by[FLEET_BY_MAX];
	size_t i;
	int rc = fleet_decision_open(rec, len, f->key->p, f->key->len, &d);

	if (rc != FLEET_OK) {
		if (may_log(f, 1))
			log_warnx("fleet: a decision read from the store %s: ignored (nothing is released)",
			          rc == FLEET_EFORGED ? "does not verify with the fleet key" : "is not a decision record");
		return;
	}
	if (strcmp(d.gw, f->gw) != 0)
		return;   /* for another gateway */
	for (i = 0; i < f->npubs && memcmp(f->pubs[i].id, d.id, FLEET_ID_LEN + 1) != 0; i++)
		;
	if (i == f->npubs)
		return;   /* not one of our pending holds (decided, timed out, or never ours): a replay does nothing */
	snprintf(by, sizeof(by), "%s@%s", d.by, d.from);
	f->on_decision(f->arg, d.id, d.approve, by);
}

static void
on_message(const char *p, size_t n, void *arg)
{
	decision_in(arg, p, n);
}

static void
on_dkeys(const redisReply *r, enum store_outcome o, void *arg)
{
	struct fleet *f = arg;
	const char *p;
	size_t i, n;

	if (o != STORE_ALLOWED || r == NULL || r->type != REDIS_REPLY_ARRAY || f->destroying)
		return;
	for (i = 0; i < r->elements; i++)
		if (store_reply_mget_at(r, i, &p, &n) == 1)
			decision_in(f, p, n);
}

/* MGET of <p>ap:d:<id> for our holds, in chunks. */
static void
poll_decisions(struct fleet *f)
{
	size_t i, n;

	for (i = 0; i < f->npubs; i += MGET_CHUNK) {
		n = f->npubs - i < MGET_CHUNK ? f->npubs - i : MGET_CHUNK;
		mget(f, "ap:d:", f->pubs[i].id, sizeof(f->pubs[0]), n, on_dkeys, f);
	}
}

/* ---- the listing ---- */

static void
list_clear(struct remote *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		fleet_hold_dispose(&r[i].h);
		free(r[i].rec);
	}
	free(r);
}

static void
refresh_end(struct refresh *rf, int ok)
{
	struct fleet *f = rf->f;

	f->refreshing = 0;
	if (ok && !f->destroying) {
		list_clear(f->list, f->nlist);
		f->list = rf->r;
		f->nlist = rf->n;
	} else {
		list_clear(rf->r, rf->n);
		if (!f->destroying) {
			list_clear(f->list, f->nlist);   /* unknown now: nothing shown as pending */
			f->list = NULL;
			f->nlist = 0;
		}
	}
	free(rf->gw);
	free(rf);
}

static void
on_alive(const redisReply *r, enum store_outcome o, void *arg)
{
	struct refresh *rf = arg;
	int64_t now = (int64_t)clock_wall_ms();
	size_t i, g;

	const char *p;
	size_t len;

	if (o != STORE_ALLOWED || store_reply_mget(r, rf->ngw) != 0)
		return refresh_end(rf, 0);
	for (i = 0; i < rf->n; i++) {
		struct remote *e = &rf->r[i];

		if (e->state != R_PENDING)
			continue;
		for (g = 0; g < rf->ngw && strcmp(rf->gw[g], e->h.gw) != 0; g++)
			;
		if (e->h.expiry_ms <= now)
			e->state = R_EXPIRED;
		else if (g == rf->ngw || store_reply_mget_at(r, g, &p, &len) != 1)
			e->state = R_GONE;
	}
	refresh_end(rf, 1);
}

static void
on_records(const redisReply *r, enum store_outcome o, void *arg)
{
	struct refresh *rf = arg;
	struct fleet *f = rf->f;
	size_t i, j, keep = 0;

	if (o != STORE_ALLOWED || store_reply_mget(r, rf->n) != 0 || f->destroying)
		return refresh_end(rf, 0);
	rf->gw = xcalloc(rf->n + 1, sizeof(*rf->gw));
	for (i = 0; i < rf->n; i++) {
		struct remote x = rf->r[i];
		const char *p = NULL;
		size_t len = 0;
		int rc = store_reply_mget_at(r, i, &p, &len);

		if (rc == 0)
			continue;   /* nil: withdrawn, or its TTL ran out */
		rc = rc == 1 ? fleet_hold_open(p, len, f->key->p, f->key->len, &x.h) : FLEET_EPARSE;
		if (rc == FLEET_OK && strcmp(x.h.id, x.id) != 0) {
			fleet_hold_dispose(&x.h);
			rc = FLEET_EPARSE;   /* a genuine record under another id's key */
		}
		if (rc != FLEET_OK) {
			if (may_log(f, 2))
				log_warnx("fleet: the record of hold %s %s: listed as unverified, not decidable", x.id,
				          rc == FLEET_EFORGED ? "does not verify with the fleet key" : "is not a hold record");
			x.state = R_UNVERIFIED;
		} else if (strcmp(x.h.gw, f->gw) == 0) {
			fleet_hold_dispose(&x.h);
			continue;   /* ours: the local listing shows it */
		} else {
			x.state = R_PENDING;
			x.rec = xmalloc(len);
			memcpy(x.rec, p, len);
			x.len = len;
			for (j = 0; j < rf->ngw && strcmp(rf->gw[j], x.h.gw) != 0; j++)
				;
			if (j == rf->ngw)
				memcpy(rf->gw[rf->ngw++], x.h.gw, strlen(x.h.gw) + 1);
		}
		rf->r[keep++] = x;
	}
	rf->n = keep;
	if (rf->ngw == 0)
		return refresh_end(rf, 1);
	mget(f, "ap:alive:", rf->gw[0], sizeof(rf->gw[0]), rf->ngw, on_alive, rf);
}

static void
on_index(const redisReply *r, enum store_outcome o, void *arg)
{
	struct refresh *rf = arg;
	struct fleet *f = rf->f;
	char (*ids)[FLEET_ID_LEN + 1];
	long n;
	size_t i;

	if (o != STORE_ALLOWED || f->destroying)
		return refresh_end(rf, 0);
	/* members that are not ids (someone else wrote them) are skipped: never listed */
	ids = xcalloc(FLEET_LIST_MAX, sizeof(*ids));
	if ((n = store_reply_ids(r, FLEET_LIST_MAX, ids)) < 0) {
		free(ids);
		return refresh_end(rf, 0);
	}
	rf->r = xcalloc((size_t)n + 1, sizeof(*rf->r));
	for (i = 0; i < (size_t)n; i++)
		memcpy(rf->r[i].id, ids[i], sizeof(ids[i]));
	rf->n = (size_t)n;
	free(ids);
	if (rf->n == 0)
		return refresh_end(rf, 1);
	mget(f, "ap:h:", rf->r[0].id, sizeof(rf->r[0]), rf->n, on_records, rf);
}

static void
refresh_start(struct fleet *f)
{
	struct refresh *rf;
	char idx[KEYBUF], lo[24], lim[24];
	const char *argv[7];
	size_t argl[7];

	if (f->refreshing)
		return;
	argv[0] = "ZREMRANGEBYSCORE";
	argl[0] = 16;
	argv[1] = idx;
	argl[1] = key_of(f, idx, "ap:idx", "");
	argv[2] = "-inf";
	argl[2] = 4;
	argl[3] = (size_t)snprintf(lo, sizeof(lo), "(%lld", (long long)((int64_t)clock_wall_ms() - FLEET_TTL_GRACE_MS));
	argv[3] = lo;
	cmd(f, 4, argv, argl, NULL, NULL);
	rf = xcalloc(1, sizeof(*rf));
	rf->f = f;
	f->refreshing = 1;
	argv[0] = "ZRANGEBYSCORE";
	argl[0] = 13;
	argv[3] = "+inf";
	argl[3] = 4;
	argv[4] = "LIMIT";
	argl[4] = 5;
	argv[5] = "0";
	argl[5] = 1;
	argl[6] = (size_t)snprintf(lim, sizeof(lim), "%d", FLEET_LIST_MAX);
	argv[6] = lim;
	cmd(f, 7, argv, argl, on_index, rf);
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct fleet *f = arg;
	char k[KEYBUF], ttl[16];
	const char *argv[5] = {"SET", k, "1", "PX", ttl};
	size_t argl[5] = {3, key_of(f, k, "ap:alive:", f->gw), 1, 2, 0};
	uint64_t conn = store_conn_id(f->cmd);
	size_t i;

	(void)fd;
	(void)what;
	if (conn == 0) {
		list_clear(f->list, f->nlist);
		f->list = NULL;
		f->nlist = 0;
		return;
	}
	argl[4] = (size_t)snprintf(ttl, sizeof(ttl), "%d", FLEET_ALIVE_TTL_MS);
	cmd(f, 5, argv, argl, NULL, NULL);
	if (conn != f->conn_seen) {
		/* a new connection (Redis may have restarted, empty): our holds again */
		for (i = 0; i < f->npubs; i++)
			send_pub(f, &f->pubs[i]);
		f->conn_seen = conn;
	}
	poll_decisions(f);
	refresh_start(f);
}

/* ---- deciding another gateway's hold ---- */

static void
pending_free(struct pending_dec *pd)
{
	free(pd->hold);
	free(pd->rec);
	free(pd);
}

static void
on_taken(const redisReply *r, enum store_outcome o, void *arg)
{
	struct pending_dec *pd = arg;
	struct fleet *f = pd->f;
	struct fleet_hold h;
	char ch[KEYBUF];

	int taken = o == STORE_ALLOWED ? store_reply_set_nx(r) : -1;
	enum fleet_decide_res res = FLEET_DECIDE_FAILED;

	if (o != STORE_ALLOWED) {
		log_warnx("fleet: a decision was not confirmed by the store (%s): if it reached Redis, the holding "
		          "gateway still applies (and audits) it", store_outcome_str(o));
	} else if (taken == 0) {
		res = FLEET_DECIDE_LATE;
		log_warnx("fleet: a decision came too late: the hold was already decided on another gateway");
	} else if (taken < 0) {
		log_warnx("fleet: unexpected answer to a decision's SET: nothing was released");
	} else if (!f->destroying) {
		res = FLEET_DECIDE_TAKEN;
		const char *argv[3] = {"PUBLISH", ch, pd->rec};
		size_t argl[3] = {7, key_of(f, ch, "ap:decisions", ""), pd->len};

		cmd(f, 3, argv, argl, NULL, NULL);
		if (fleet_hold_open(pd->hold, pd->hold_len, f->key->p, f->key->len, &h) == FLEET_OK) {
			f->on_decided(f->arg, &h, pd->approve, pd->by);
			fleet_hold_dispose(&h);
		}
	}
	pd->done(pd->done_arg, res, pd->gw);
	pending_free(pd);
}

enum fleet_decide_res
fleet_decide(struct fleet *f, const char *id, int approve, const char *by, fleet_decide_done *done,
             void *done_arg)
{
	struct fleet_decision d;
	struct pending_dec *pd;
	struct remote *e = NULL;
	char k[KEYBUF], ttl[24];
	int64_t left;
	size_t i;
	long n;

	if (!fleet_ready(f))
		return FLEET_DECIDE_DOWN;
	for (i = 0; i < f->nlist; i++)
		if (strcmp(f->list[i].id, id) == 0)
			e = &f->list[i];
	if (e == NULL)
		return FLEET_DECIDE_UNKNOWN;
	if (e->state != R_PENDING)
		return FLEET_DECIDE_UNDECIDABLE;
	memset(&d, 0, sizeof(d));
	memcpy(d.id, e->id, sizeof(d.id));
	memcpy(d.gw, e->h.gw, sizeof(d.gw));
	memcpy(d.from, f->gw, sizeof(d.from));
	snprintf(d.by, sizeof(d.by), "%s", by);
	d.approve = approve ? 1 : 0;
	d.time_ms = (int64_t)clock_wall_ms();
	n = fleet_decision_seal(&d, f->key->p, f->key->len, f->scratch, sizeof(f->scratch));
	if (n < 0)
		return FLEET_DECIDE_UNDECIDABLE;
	pd = xcalloc(1, sizeof(*pd));
	pd->f = f;
	pd->done = done;
	pd->done_arg = done_arg;
	memcpy(pd->gw, d.gw, sizeof(pd->gw));
	pd->approve = d.approve;
	memcpy(pd->by, d.by, sizeof(pd->by));
	pd->rec = xmalloc((size_t)n);
	memcpy(pd->rec, f->scratch, (size_t)n);
	pd->len = (size_t)n;
	pd->hold = xmalloc(e->len);
	memcpy(pd->hold, e->rec, e->len);
	pd->hold_len = e->len;
	left = e->h.expiry_ms - d.time_ms + FLEET_TTL_GRACE_MS;
	{
		const char *argv[6] = {"SET", k, pd->rec, "NX", "PX", ttl};
		size_t argl[6] = {3, key_of(f, k, "ap:d:", d.id), pd->len, 2, 2, 0};

		argl[5] = (size_t)snprintf(ttl, sizeof(ttl), "%lld", (long long)(left > 1000 ? left : 1000));
		if (store_raw(f->cmd, 6, argv, argl, on_taken, pd) != 0) {
			pending_free(pd);
			return FLEET_DECIDE_DOWN;
		}
	}
	return FLEET_DECIDE_SENT;
}

size_t
fleet_list_json(struct fleet *f, struct evbuffer *out, int first)
{
	static const char *const names[] = {"?", "pending", "expired", "gateway_gone", "unverified"};
	int64_t now = (int64_t)clock_wall_ms();
	size_t i, j, cap, written = 0;
	char sha[65];

	for (i = 0; i < f->nlist; i++) {
		const struct remote *e = &f->list[i];
		const struct fleet_hold *h = &e->h;
		struct jbuf jb;
		char *buf;
		long n;

		if (!first || written > 0)
			evbuffer_add(out, SLUICE_LIT(","));
		written++;
		if (e->state == R_UNVERIFIED) {
			evbuffer_add_printf(out, "{\"id\":\"%s\",\"state\":\"unverified\"}", e->id);
			continue;
		}
		cap = 6 * e->len + 512;
		buf = try_malloc(cap);
		if (buf == NULL) {
			evbuffer_add_printf(out, "{\"id\":\"%s\",\"error\":\"cannot format\"}", e->id);
			continue;
		}
		memcpy(sha, h->body_sha256, sizeof(sha));
		jb_init(&jb, buf, cap);
		jb_str(&jb, "id", e->id);
		jb_str(&jb, "gateway", h->gw);
		jb_str(&jb, "state", names[e->state]);
		jb_int(&jb, "age_ms", now > h->created_ms ? now - h->created_ms : 0);
		jb_int(&jb, "timeout_left_ms", h->expiry_ms > now ? h->expiry_ms - now : 0);
		jb_str(&jb, "sandbox", h->sandbox);
		jb_str(&jb, "method", h->method);
		jb_str(&jb, "host", h->host);
		jb_str(&jb, "path", h->path);
		jb_str(&jb, "rule", h->rule);
		jb_str(&jb, "body_sha256", sha);
		if (h->nfields > 0) {
			const char *pl[POLICY_FIELDS_MAX], *va[POLICY_FIELDS_MAX];

			for (j = 0; j < h->nfields; j++) {
				pl[j] = h->fields[j].place;
				va[j] = h->fields[j].value;
			}
			jb_pairs(&jb, "fields", "place", pl, "value", va, h->nfields);
		} else {
			jb_empty_array(&jb, "fields");
		}
		n = jb_finish(&jb, 0);
		if (n > 0)
			evbuffer_add(out, buf, (size_t)n);
		else
			evbuffer_add_printf(out, "{\"id\":\"%s\",\"error\":\"cannot format\"}", e->id);
		free(buf);
	}
	return written;
}

/* ---- the client ---- */

int
fleet_ready(const struct fleet *f)
{
	return f != NULL && store_conn_id(f->cmd) != 0;
}

struct fleet *
fleet_create(struct event_base *base, const struct store_opts *so, const char *gateway_id,
             const struct secret_buf *key, fleet_decision_fn *on_decision, fleet_decided_fn *on_decided, void *arg,
             const char **err)
{
	struct store_opts cmd_opts, sub_opts;
	struct fleet *f;
	struct timeval tv = {0, FLEET_TICK_MS * 1000};

	if (key == NULL || key->len < FLEET_KEY_MIN) {
		*err = "the fleet key (state.fleet_key) is missing or shorter than 32 bytes";
		return NULL;
	}
	if (gateway_id == NULL || strlen(gateway_id) == 0 || strlen(gateway_id) > FLEET_GW_MAX || on_decision == NULL ||
	    on_decided == NULL) {
		*err = "the fleet client needs a gateway id and its callbacks";
		return NULL;
	}
	f = xcalloc(1, sizeof(*f));
	f->base = base;
	memcpy(f->gw, gateway_id, strlen(gateway_id) + 1);
	f->on_decision = on_decision;
	f->on_decided = on_decided;
	f->arg = arg;
	if ((f->key = secret_buf_new(key->len)) == NULL) {
		*err = "no memory for the fleet key";
		free(f);
		return NULL;
	}
	memcpy(f->key->p, key->p, key->len);
	f->key->len = key->len;
	cmd_opts = *so;
	cmd_opts.unread_max = FLEET_UNREAD_MAX;
	sub_opts = *so;
	sub_opts.unread_max = FLEET_SUB_UNREAD_MAX;
	if ((f->cmd = store_create(base, &cmd_opts, err)) == NULL ||
	    (f->sub = store_create_sub(base, &sub_opts, "ap:decisions", on_message, f, err)) == NULL) {
		fleet_destroy(f);
		return NULL;
	}
	f->tick = event_new(base, -1, EV_PERSIST, on_tick, f);
	if (f->tick == NULL || event_add(f->tick, &tv) != 0)
		fatalx("fleet: out of memory");
	return f;
}

void
fleet_destroy(struct fleet *f)
{
	size_t i;

	if (f == NULL)
		return;
	f->destroying = 1;
	if (f->tick != NULL)
		event_free(f->tick);
	store_destroy(f->sub);
	store_destroy(f->cmd);   /* callbacks in flight run now, with STORE_ESHUTDOWN */
	for (i = 0; i < f->npubs; i++)
		free(f->pubs[i].rec);
	free(f->pubs);
	list_clear(f->list, f->nlist);
	secret_buf_free(f->key);
	free(f);
}
