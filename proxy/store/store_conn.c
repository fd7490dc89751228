/*
 * proxy/store/store_conn.c - the store's connection (store_conn_int.h): connect
 * (TCP or a unix socket), the handshake (AUTH, SELECT, the eviction check,
 * SCRIPT LOAD, SUBSCRIBE for a subscriber), reconnecting with backoff, and
 * the store's life (store.h: store_create, store_create_sub, store_destroy
 * and the getters).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <event2/event_struct.h>
#include <hiredis/async.h>

#include "common/log.h"
#include "common/sluice.h"
#include "store_conn_int.h"
#include "secrets/secrets.h"

enum hs_step {
	HS_AUTH = 1,
	HS_SELECT = 2,
	HS_CONFIG = 3,
	HS_INFO = 4,
	HS_SCRIPT = 5,   /* + enum store_script */
};

/* ---- connection ---- */

static void
schedule_retry(struct store *s)
{
	struct timeval tv;

	s->state = STORE_S_BACKOFF;
	__atomic_store_n(&s->st.up, 0, __ATOMIC_RELAXED);
	s->budgets_ok = 0;
	if (s->closing)
		return;
	tv.tv_sec = s->backoff_ms / 1000;
	tv.tv_usec = (suseconds_t)(s->backoff_ms % 1000) * 1000;
	evtimer_add(s->retry_ev, &tv);
	s->backoff_ms = s->backoff_ms * 2 > s->backoff_max_ms ? s->backoff_max_ms : s->backoff_ms * 2;
}

/* The current connection <ac> is gone (hiredis frees it after this returns): once per connection. */
static void
conn_lost(struct store *s, const redisAsyncContext *ac)
{
	if (s->ac != ac || ac == NULL)
		return;
	s->ac = NULL;
	evtimer_del(s->hs_ev);
	count(&s->st.disconnects, 1);
	schedule_retry(s);
}

/* Drops the current connection now (not from inside a hiredis callback: then the free is deferred by hiredis). */
void
store_conn_drop(struct store *s)
{
	redisAsyncContext *ac = s->ac;

	if (ac == NULL)
		return;
	s->state = STORE_S_BACKOFF;  /* operations started from the callbacks below fail at once */
	__atomic_store_n(&s->st.up, 0, __ATOMIC_RELAXED);
	/* conn_lost runs from the disconnect callback when the connection was up; make sure it runs once anyway */
	redisAsyncFree(ac);
	conn_lost(s, ac);
}

static void
on_connect(const redisAsyncContext *ac, int status)
{
	struct store *s = ac->data;
	char w[STORE_NAME_MAX + 16];

	if (status == REDIS_OK)
		return;
	if (may_log(s, LOG_CONN))
		log_warnx("store %s: cannot connect: %s", where(s, w, sizeof(w)), ac->errstr);
	conn_lost(s, ac);
}

static void
on_disconnect(const redisAsyncContext *ac, int status)
{
	struct store *s = ac->data;
	char w[STORE_NAME_MAX + 16];

	if (!s->closing && status != REDIS_OK && may_log(s, LOG_CONN))
		log_warnx("store %s: connection lost: %s", where(s, w, sizeof(w)), ac->errstr);
	conn_lost(s, ac);
}

static void
hs_fail(struct store *s, redisAsyncContext *ac, const char *why)
{
	char w[STORE_NAME_MAX + 16];

	if (s->hs_failed)
		return;
	s->hs_failed = 1;
	if (may_log(s, LOG_CONN))
		log_warnx("store %s: %s; not used, retrying", where(s, w, sizeof(w)), why);
	/* inside a reply callback: hiredis frees after it returns, then calls on_disconnect */
	redisAsyncFree(ac);
}

/* A subscriber's channel: every push it receives (confirmations, messages), until the connection goes. */
static void
on_sub(redisAsyncContext *ac, void *reply, void *priv)
{
	struct store *s = priv;
	const char *p = NULL;
	size_t n = 0;
	int rc;

	(void)ac;
	if (reply == NULL)
		return;  /* the connection is going away: on_disconnect reconnects */
	s->last_reply_us = mono_us();
	rc = store_reply_message(reply, s->channel, strlen(s->channel), &p, &n);
	if (rc == 1)
		s->msg_cb(p, n, s->msg_arg);
	else if (rc < 0 && may_log(s, LOG_REPLY))
		log_warnx("store: unexpected push on the subscriber (type %d): ignored", ((const redisReply *)reply)->type);
}

static void
hs_done(struct store *s)
{
	char w[STORE_NAME_MAX + 16];

	evtimer_del(s->hs_ev);
	if (s->channel != NULL) {
		const char *argv[2] = {"SUBSCRIBE", s->channel};
		size_t argl[2] = {9, strlen(s->channel)};

		if (redisAsyncCommandArgv(s->ac, on_sub, s, 2, argv, argl) != REDIS_OK) {
			hs_fail(s, s->ac, "SUBSCRIBE could not be sent");
			return;
		}
		s->budgets_ok = 1;  /* not used; keeps the ready line short */
	}
	s->state = STORE_S_READY;
	__atomic_store_n(&s->st.up, 1, __ATOMIC_RELAXED);
	s->backoff_ms = STORE_BACKOFF_MIN_MS;
	count(&s->st.connects, 1);
	log_info("store %s: ready%s", where(s, w, sizeof(w)),
	         s->budgets_ok ? "" : " for rate limits only (budgets refused: keys may be evicted)");
}

static void
evict_checked(struct store *s, enum store_evict e, const char *val, const char *how)
{
	char w[STORE_NAME_MAX + 16];

	s->budgets_ok = e == STORE_EVICT_NO;
	if (e == STORE_EVICT_YES)
		log_warnx("store %s: maxmemory-policy is %s, not noeviction: Redis may drop a budget's key and so reset "
		          "what was spent; budgets are refused on this Redis (rate limits are counted)",
		          where(s, w, sizeof(w)), val);
	else if (e == STORE_EVICT_UNKNOWN)
		log_warnx("store %s: maxmemory-policy cannot be read (%s): budgets are refused on this Redis, since it "
		          "may evict their keys (rate limits are counted)", where(s, w, sizeof(w)), how);
}

static void
on_handshake(redisAsyncContext *ac, void *reply, void *priv)
{
	struct store *s = ac->data;
	const redisReply *r = reply;
	uintptr_t step = (uintptr_t)priv;
	char val[64];

	if (r == NULL || s->hs_failed)
		return;  /* the connection is going away: on_disconnect / conn_lost reconnects */
	s->last_reply_us = mono_us();
	switch (step) {
	case HS_AUTH:
		if (store_reply_ok(r) != 0)
			return hs_fail(s, ac, "authentication failed (AUTH was refused)");
		break;
	case HS_SELECT:
		if (store_reply_ok(r) != 0)
			return hs_fail(s, ac, "SELECT of the database was refused");
		break;
	case HS_CONFIG: {
		enum store_evict e = store_reply_config_evict(r, val, sizeof(val));

		if (e == STORE_EVICT_UNKNOWN) {
			/* CONFIG renamed or refused (ACL): INFO memory says the same */
			if (redisAsyncCommand(ac, on_handshake, (void *)(uintptr_t)HS_INFO, "INFO memory") != REDIS_OK)
				return hs_fail(s, ac, "INFO could not be sent");
			s->hs_left++;
		} else {
			evict_checked(s, e, val, "CONFIG GET");
		}
		break;
	}
	case HS_INFO:
		evict_checked(s, store_reply_info_evict(r, val, sizeof(val)), val, "CONFIG GET and INFO memory refused");
		break;
	default:
		if (step < HS_SCRIPT || step >= HS_SCRIPT + STORE_NSCRIPT ||
		    store_reply_sha(r, s->sha[step - HS_SCRIPT]) != 0)
			return hs_fail(s, ac, "SCRIPT LOAD was refused");
		break;
	}
	if (--s->hs_left == 0)
		hs_done(s);
}

static void
on_hs_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct store *s = arg;
	char w[STORE_NAME_MAX + 16];

	(void)fd;
	(void)what;
	if (may_log(s, LOG_CONN))
		log_warnx("store %s: not ready within the handshake bound; retrying", where(s, w, sizeof(w)));
	store_conn_drop(s);
}

static int
send_handshake(struct store *s, redisAsyncContext *ac)
{
	int i;

	s->hs_left = 0;
	s->hs_failed = 0;
	if (s->password != NULL) {
		const char *argv[2] = {"AUTH", (const char *)s->password->p};
		size_t argl[2] = {4, s->password->len};

		if (redisAsyncCommandArgv(ac, on_handshake, (void *)(uintptr_t)HS_AUTH, 2, argv, argl) != REDIS_OK)
			return -1;
		s->hs_left++;
	}
	if (s->channel != NULL) {
		/* a subscriber: no counters on it (channels are not per database) */
		if (redisAsyncCommand(ac, on_handshake, (void *)(uintptr_t)HS_SELECT, "SELECT %u", s->db) != REDIS_OK)
			return -1;
		s->hs_left++;
		return 0;
	}
	if (redisAsyncCommand(ac, on_handshake, (void *)(uintptr_t)HS_SELECT, "SELECT %u", s->db) != REDIS_OK ||
	    redisAsyncCommand(ac, on_handshake, (void *)(uintptr_t)HS_CONFIG, "CONFIG GET maxmemory-policy") != REDIS_OK)
		return -1;
	s->hs_left += 2;
	for (i = 0; i < STORE_NSCRIPT; i++) {
		if (redisAsyncCommand(ac, on_handshake, (void *)(uintptr_t)(HS_SCRIPT + i), "SCRIPT LOAD %s",
		                      store_script_text((enum store_script)i)) != REDIS_OK)
			return -1;
		s->hs_left++;
	}
	return 0;
}

/* Redis sent more than STORE_UNREAD_MAX bytes of a reply not yet whole (store_ev.c): drop the connection. */
static void
on_overflow(redisAsyncContext *ac, void *arg)
{
	struct store *s = arg;
	char w[STORE_NAME_MAX + 16];

	if (may_log(s, LOG_REPLY))
		log_warnx("store %s: a reply over %u bytes; connection dropped", where(s, w, sizeof(w)),
		          (unsigned)s->unread_max);
	count_err(s, STORE_EREPLY);
	if (s->ac == ac)
		store_conn_drop(s);
	else
		redisAsyncFree(ac);
}

void
store_conn_start(struct store *s)
{
	redisAsyncContext *ac;
	struct timeval tv;
	char w[STORE_NAME_MAX + 16];
	unsigned hs_ms;

	s->state = STORE_S_CONNECTING;
	s->budgets_ok = 0;
	ac = s->unix_path != NULL ? redisAsyncConnectUnix(s->unix_path) : redisAsyncConnect(s->host, (int)s->port);
	if (ac == NULL || ac->err) {
		if (may_log(s, LOG_CONN))
			log_warnx("store %s: cannot connect: %s", where(s, w, sizeof(w)),
			          ac != NULL ? ac->errstr : "out of memory");
		if (ac != NULL)
			redisAsyncFree(ac);
		count(&s->st.disconnects, 1);
		schedule_retry(s);
		return;
	}
	ac->data = s;
	s->ac = ac;
	s->conn++;
	if (store_reply_fns() == NULL) {  /* the bounded reader (store_int.h) or no connection */
		store_conn_drop(s);
		return;
	}
	ac->c.reader->fn = store_reply_fns();
	if (store_ev_attach(ac, s->base, s->unread_max, on_overflow, s) != 0 || redisAsyncSetConnectCallback(ac, on_connect) != REDIS_OK ||
	    redisAsyncSetDisconnectCallback(ac, on_disconnect) != REDIS_OK || send_handshake(s, ac) != 0) {
		store_conn_drop(s);
		return;
	}
	hs_ms = 4 * s->timeout_ms > STORE_HANDSHAKE_MIN_MS ? 4 * s->timeout_ms : STORE_HANDSHAKE_MIN_MS;
	tv.tv_sec = hs_ms / 1000;
	tv.tv_usec = (suseconds_t)(hs_ms % 1000) * 1000;
	evtimer_add(s->hs_ev, &tv);
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	store_conn_start(arg);
}

/* ---- the store ---- */

static struct store *
store_new(struct event_base *base, const struct store_opts *o, const char **err)
{
	struct store *s;

	if (base == NULL || o == NULL || (o->unix_path == NULL) == (o->host == NULL)) {
		*err = "exactly one of a host or a unix socket path is needed";
		return NULL;
	}
	if (o->unix_path == NULL && (o->port == 0 || o->port > 65535)) {
		*err = "the port must be 1..65535";
		return NULL;
	}
	if (o->timeout_ms < STORE_TIMEOUT_MIN_MS || o->timeout_ms > STORE_TIMEOUT_MAX_MS) {
		*err = "the timeout must be 1ms..10s";
		return NULL;
	}
	if (o->key_prefix != NULL && strlen(o->key_prefix) > STORE_PREFIX_MAX) {
		*err = "the key prefix is too long";
		return NULL;
	}
	if (o->backoff_max_ms != 0 && (o->backoff_max_ms < STORE_BACKOFF_MIN_MS || o->backoff_max_ms > STORE_BACKOFF_MAX_MS)) {
		*err = "the backoff bound must be 100ms..5s";
		return NULL;
	}
	if (o->password != NULL && (o->password->len == 0 || o->password->len > SECRET_MAX_BYTES)) {
		*err = "the password is empty or too long";
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	if (o->password != NULL) {
		if ((s->password = secret_buf_new(o->password->len + 1)) == NULL) {
			free(s);
			*err = "no memory for the password";
			return NULL;
		}
		memcpy(s->password->p, o->password->p, o->password->len);
		s->password->len = o->password->len;
		s->password->p[s->password->len] = '\0';
	}
	s->base = base;
	s->host = o->host != NULL ? xstrdup(o->host) : NULL;
	s->unix_path = o->unix_path != NULL ? xstrdup(o->unix_path) : NULL;
	s->prefix = xstrdup(o->key_prefix != NULL ? o->key_prefix : "");
	s->port = o->port;
	s->db = o->db;
	s->timeout_ms = o->timeout_ms;
	s->backoff_max_ms = o->backoff_max_ms != 0 ? o->backoff_max_ms : STORE_BACKOFF_MAX_MS;
	s->unread_max = o->unread_max != 0 ? o->unread_max : STORE_UNREAD_MAX;
	s->backoff_ms = STORE_BACKOFF_MIN_MS;
	s->retry_ev = evtimer_new(base, on_retry, s);
	s->hs_ev = evtimer_new(base, on_hs_timeout, s);
	if (s->retry_ev == NULL || s->hs_ev == NULL)
		fatalx("store: out of memory");
	return s;
}

struct store *
store_create(struct event_base *base, const struct store_opts *o, const char **err)
{
	struct store *s = store_new(base, o, err);

	if (s != NULL)
		store_conn_start(s);
	return s;
}

struct store *
store_create_sub(struct event_base *base, const struct store_opts *o, const char *channel, store_msg_cb *cb,
                 void *arg, const char **err)
{
	struct store *s;
	size_t n;

	if (channel == NULL || cb == NULL || (n = strlen(channel)) == 0 || n > STORE_NAME_MAX) {
		*err = "a subscriber needs a channel and a callback";
		return NULL;
	}
	if ((s = store_new(base, o, err)) == NULL)
		return NULL;
	n += strlen(s->prefix) + 1;
	s->channel = xmalloc(n);
	snprintf(s->channel, n, "%s%s", s->prefix, channel);
	s->msg_cb = cb;
	s->msg_arg = arg;
	store_conn_start(s);
	return s;
}

uint64_t
store_conn_id(const struct store *s)
{
	return s->state == STORE_S_READY ? s->conn : 0;
}

const char *
store_prefix(const struct store *s)
{
	return s->prefix;
}

void
store_destroy(struct store *s)
{
	if (s == NULL)
		return;
	s->closing = 1;
	store_batches_send(s);
	store_conn_drop(s);  /* every operation waiting gets STORE_ESHUTDOWN through on_reply */
	evtimer_del(s->retry_ev);
	event_free(s->retry_ev);
	event_free(s->hs_ev);
	store_ops_free(s);
	secret_buf_free(s->password);
	free(s->host);
	free(s->unix_path);
	free(s->prefix);
	free(s->channel);
	free(s);
}

enum store_state
store_state_get(const struct store *s)
{
	return s->state;
}

int
store_budgets_ok(const struct store *s)
{
	return s->state == STORE_S_READY && s->budgets_ok;
}

void
store_stats_get(const struct store *s, struct store_stats *out)
{
	const uint64_t *src = (const uint64_t *)&s->st;
	uint64_t *dst = (uint64_t *)out;
	size_t i;

	for (i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	for (i = 1; i < STORE_LATENCY_BUCKETS; i++)
		out->latency_le[i] += out->latency_le[i - 1];
}
