/*
 * proxy/judge/approvals.c - the registry of requests held for approval.  The
 * thread-safety design (who takes the mutex, who frees the event, why no
 * callback follows a cancel) is described in approvals.h.
 *
 * At most max_pending approvals are live at once (pending, or decided with
 * their callback not run yet), so a linear walk of the list is bounded and
 * cheap next to the human decision it serves.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>
#include <openssl/rand.h>
#include "common/clock.h"
#include "common/hex.h"
#include "common/json.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/judge/approvals.h"

enum ap_state {
	AP_PENDING = 1, /* waiting: in the listing, decidable */
	AP_DECIDED = 2, /* outcome set; its event is active or about to fire: the callback is due */
};

struct approval {
	struct approvals *a;
	char id[APPROVALS_ID_LEN + 1];
	enum ap_state state;
	enum approval_decision decision;
	char by[APPROVALS_BY_MAX];
	struct approval_info info;       /* strings and fields point into <text> */
	struct policy_field fields[POLICY_FIELDS_MAX];
	char *text;
	uint64_t added_ms;
	uint64_t deadline_ms;
	struct event *ev;                /* on the holder's base; owned by the approval */
	approval_cb cb;
	void *cb_arg;
	TAILQ_ENTRY(approval) link;
};

struct approvals {
	pthread_mutex_t mu;
	TAILQ_HEAD(, approval) list;     /* live approvals, oldest first */
	size_t max_pending;
	size_t nlive;
	size_t npending;
	unsigned refs;                   /* 1 for the owner until approvals_free, + 1 per live approval */
	int closed;
	approval_note_fn note;
	void *note_arg;
	void (*watch)(void *arg);        /* the pending set changed (fleet) */
	void *watch_arg;
};

const char *
approvals_decision_name(enum approval_decision decision)
{
	switch (decision) {
	case APPROVAL_APPROVED:
		return "approved";
	case APPROVAL_REJECTED:
		return "rejected";
	case APPROVAL_TIMEOUT:
		return "timeout";
	case APPROVAL_SHUTDOWN:
		return "shutdown";
	case APPROVAL_CANCELLED:
		return "cancelled";
	}
	return "?";
}

int
approvals_id_valid(const char *s)
{
	size_t i;

	if (s == NULL)
		return 0;
	for (i = 0; i < APPROVALS_ID_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[APPROVALS_ID_LEN] == '\0';
}

struct approvals *
approvals_new(size_t max_pending)
{
	struct approvals *a = xcalloc(1, sizeof(*a));

	pthread_mutex_init(&a->mu, NULL);
	TAILQ_INIT(&a->list);
	a->max_pending = max_pending;
	a->refs = 1;
	return a;
}

void
approvals_set_note(struct approvals *a, approval_note_fn fn, void *arg)
{
	pthread_mutex_lock(&a->mu);
	a->note = fn;
	a->note_arg = arg;
	pthread_mutex_unlock(&a->mu);
}

/* Drops one reference; the last frees the registry.  Called without the mutex. */
static void
registry_unref(struct approvals *a)
{
	unsigned left;

	pthread_mutex_lock(&a->mu);
	left = --a->refs;
	pthread_mutex_unlock(&a->mu);
	if (left > 0)
		return;
	pthread_mutex_destroy(&a->mu);
	free(a);
}

/* Under the mutex. */
static void
watch(struct approvals *a)
{
	if (a->watch != NULL)
		a->watch(a->watch_arg);
}

/* Under the mutex. */
static void
note(struct approvals *a, struct approval *ap)
{
	if (a->note != NULL)
		a->note(a->note_arg, ap->id, &ap->info, ap->decision, ap->by);
	watch(a);
}

void
approvals_set_watch(struct approvals *a, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&a->mu);
	a->watch = fn;
	a->watch_arg = arg;
	pthread_mutex_unlock(&a->mu);
}

/* Under the mutex: a pending approval gets its outcome; its event fires (when <activate>) on the holder's thread. */
static void
settle(struct approvals *a, struct approval *ap, enum approval_decision decision, const char *by, int activate)
{
	ap->state = AP_DECIDED;
	ap->decision = decision;
	snprintf(ap->by, sizeof(ap->by), "%s", by != NULL ? by : "?");
	a->npending--;
	note(a, ap);
	if (activate)
		event_active(ap->ev, EV_READ, 0);
}

/* Under the mutex. */
static void
unlink_live(struct approvals *a, struct approval *ap)
{
	TAILQ_REMOVE(&a->list, ap, link);
	a->nlive--;
	if (ap->state == AP_PENDING)
		a->npending--;
}

static void
approval_destroy(struct approval *ap)
{
	free(ap->text);
	free(ap);
}

/* The approval's event: a decision made it active, or its timeout ran out.  On the holder's thread. */
static void
fire_cb(evutil_socket_t fd, short what, void *arg)
{
	struct approval *ap = arg;
	struct approvals *a = ap->a;

	(void)fd;
	(void)what;
	pthread_mutex_lock(&a->mu);
	if (ap->state == AP_PENDING)
		settle(a, ap, APPROVAL_TIMEOUT, "timeout", 0);
	unlink_live(a, ap);
	pthread_mutex_unlock(&a->mu);
	/* also drops an activation queued by a decision that came while the timeout was being run */
	event_free(ap->ev);
	ap->ev = NULL;
	ap->cb(ap->cb_arg, ap->decision, ap->by);
	approval_destroy(ap);
	registry_unref(a);
}

/* Bytes a copied string takes in <text> (NULL: none). */
static size_t
str_need(const char *s)
{
	return s != NULL ? strlen(s) + 1 : 0;
}

static const char *
str_put(char **pos, const char *s)
{
	size_t n;
	char *d = *pos;

	if (s == NULL)
		return NULL;
	n = strlen(s) + 1;
	memcpy(d, s, n);
	*pos += n;
	return d;
}

/* Copies <in> into <ap> (one allocation: the peer chose the path's and the values' sizes). */
static int
info_copy(struct approval *ap, const struct approval_info *in)
{
	size_t need, i;
	char *pos;

	need = str_need(in->sandbox) + str_need(in->method) + str_need(in->host) + str_need(in->path) +
	       str_need(in->rule) + str_need(in->request_id);
	for (i = 0; i < in->nfields; i++)
		need += str_need(in->fields[i].place) + str_need(in->fields[i].value);
	ap->text = try_malloc(need > 0 ? need : 1);
	if (ap->text == NULL)
		return SLUICE_ENOMEM;
	pos = ap->text;
	ap->info.sandbox = str_put(&pos, in->sandbox);
	ap->info.method = str_put(&pos, in->method);
	ap->info.host = str_put(&pos, in->host);
	ap->info.path = str_put(&pos, in->path);
	ap->info.rule = str_put(&pos, in->rule);
	ap->info.request_id = str_put(&pos, in->request_id);
	for (i = 0; i < in->nfields; i++) {
		ap->fields[i].place = str_put(&pos, in->fields[i].place != NULL ? in->fields[i].place : "?");
		ap->fields[i].value = str_put(&pos, in->fields[i].value != NULL ? in->fields[i].value : "");
	}
	ap->info.fields = ap->fields;
	ap->info.nfields = in->nfields;
	memcpy(ap->info.body_sha256, in->body_sha256, sizeof(ap->info.body_sha256));
	return 0;
}

/* Under the mutex: the live approval with id <id>, or NULL. */
static struct approval *
find(struct approvals *a, const char *id)
{
	struct approval *ap;

	TAILQ_FOREACH(ap, &a->list, link)
		if (memcmp(ap->id, id, APPROVALS_ID_LEN + 1) == 0)
			return ap;
	return NULL;
}

static int
id_make(char id[APPROVALS_ID_LEN + 1])
{
	uint8_t raw[APPROVALS_ID_LEN / 2];

	if (RAND_bytes(raw, sizeof(raw)) != 1)
		return SLUICE_EIO;
	hex_encode(id, raw, sizeof(raw));
	return 0;
}

int
approvals_add(struct approvals *a, const struct approval_info *info, unsigned timeout_ms, struct event_base *base,
              approval_cb cb, void *arg, char id[17])
{
	struct approval *ap;
	struct timeval tv = {(time_t)(timeout_ms / 1000), (suseconds_t)(timeout_ms % 1000) * 1000};
	int ret, tries;

	id[0] = '\0';
	if (info == NULL || info->method == NULL || info->host == NULL || info->path == NULL ||
	    info->nfields > POLICY_FIELDS_MAX || (info->nfields > 0 && info->fields == NULL) || base == NULL ||
	    cb == NULL)
		return SLUICE_EINVAL;
	ap = xcalloc(1, sizeof(*ap));
	ap->a = a;
	ap->state = AP_PENDING;
	ap->cb = cb;
	ap->cb_arg = arg;
	if ((ret = info_copy(ap, info)) != 0)
		goto fail;
	ap->ev = event_new(base, -1, 0, fire_cb, ap);
	if (ap->ev == NULL) {
		ret = SLUICE_EIO;
		goto fail;
	}
	pthread_mutex_lock(&a->mu);
	if (a->closed)
		ret = SLUICE_ECLOSED;
	else if (a->nlive >= a->max_pending)
		ret = SLUICE_ETOOBIG;
	for (tries = 0; ret == 0; tries++) {
		/* 64 random bits: a collision among 1024 live ids is ~2^-44; a second draw settles it */
		if (tries == 4 || id_make(ap->id) != 0)
			ret = SLUICE_EIO;
		else if (find(a, ap->id) == NULL)
			break;
	}
	if (ret == 0 && event_add(ap->ev, &tv) != 0)
		ret = SLUICE_EIO;
	if (ret != 0) {
		pthread_mutex_unlock(&a->mu);
		goto fail;
	}
	ap->added_ms = clock_mono_ms();
	ap->deadline_ms = ap->added_ms + timeout_ms;
	TAILQ_INSERT_TAIL(&a->list, ap, link);
	a->nlive++;
	a->npending++;
	a->refs++;
	watch(a);
	pthread_mutex_unlock(&a->mu);
	memcpy(id, ap->id, APPROVALS_ID_LEN + 1);
	return 0;
fail:
	if (ap->ev != NULL)
		event_free(ap->ev);
	approval_destroy(ap);
	return ret;
}

void
approvals_cancel(struct approvals *a, const char *id)
{
	struct approval *ap;

	if (a == NULL || !approvals_id_valid(id))
		return;
	pthread_mutex_lock(&a->mu);
	ap = find(a, id);
	if (ap == NULL) {
		pthread_mutex_unlock(&a->mu);
		return;
	}
	if (ap->state == AP_PENDING) {
		ap->decision = APPROVAL_CANCELLED;
		snprintf(ap->by, sizeof(ap->by), "client");
		note(a, ap);
	}
	unlink_live(a, ap);
	pthread_mutex_unlock(&a->mu);
	/* on the holder's thread: its callback is not running; this drops its timeout and any activation */
	event_free(ap->ev);
	approval_destroy(ap);
	registry_unref(a);
}

int
approvals_decide(struct approvals *a, const char *id, int approve, const char *by)
{
	struct approval *ap;
	int ret = SLUICE_ENOENT;

	if (a == NULL || (approve != 0 && approve != 1) || by == NULL)
		return SLUICE_EINVAL;
	if (!approvals_id_valid(id))
		return SLUICE_ENOENT;
	pthread_mutex_lock(&a->mu);
	ap = find(a, id);
	if (ap != NULL && ap->state == AP_PENDING) {
		settle(a, ap, approve ? APPROVAL_APPROVED : APPROVAL_REJECTED, by, 1);
		ret = 0;
	}
	pthread_mutex_unlock(&a->mu);
	return ret;
}

void
approvals_shutdown(struct approvals *a)
{
	struct approval *ap;

	if (a == NULL)
		return;
	pthread_mutex_lock(&a->mu);
	a->closed = 1;
	TAILQ_FOREACH(ap, &a->list, link)
		if (ap->state == AP_PENDING)
			settle(a, ap, APPROVAL_SHUTDOWN, "shutdown", 1);
	pthread_mutex_unlock(&a->mu);
}

void
approvals_free(struct approvals *a)
{
	if (a == NULL)
		return;
	approvals_shutdown(a);
	pthread_mutex_lock(&a->mu);
	if (a->nlive > 0)
		log_info("approvals: %zu held request(s) still to be answered as the gateway stops", a->nlive);
	pthread_mutex_unlock(&a->mu);
	registry_unref(a);   /* the live ones hold theirs until their callbacks ran */
}

size_t
approvals_pending(struct approvals *a)
{
	size_t n;

	pthread_mutex_lock(&a->mu);
	n = a->npending;
	pthread_mutex_unlock(&a->mu);
	return n;
}

/* Bytes one approval's JSON object may need: every byte may become \u00XX (6), plus the fixed members. */
static size_t
entry_cap(const struct approval *ap)
{
	size_t n = 0, i;

	n += str_need(ap->info.sandbox) + str_need(ap->info.method) + str_need(ap->info.host) +
	     str_need(ap->info.path) + str_need(ap->info.rule);
	for (i = 0; i < ap->info.nfields; i++)
		n += str_need(ap->fields[i].place) + str_need(ap->fields[i].value) + 32;
	return 6 * n + 512;
}

/* Under the mutex: one approval's object into <out>; 0, or -1 when it could not be formatted. */
static int
entry_json(const struct approval *ap, uint64_t now, struct evbuffer *out)
{
	char sha[65];
	struct jbuf jb;
	size_t cap = entry_cap(ap), i;
	char *buf = try_malloc(cap);
	long n;

	if (buf == NULL)
		return -1;
	hex_encode(sha, ap->info.body_sha256, 32);
	jb_init(&jb, buf, cap);
	jb_str(&jb, "id", ap->id);
	jb_int(&jb, "age_ms", (int64_t)(now - ap->added_ms));
	jb_int(&jb, "timeout_left_ms", ap->deadline_ms > now ? (int64_t)(ap->deadline_ms - now) : 0);
	jb_str(&jb, "sandbox", ap->info.sandbox);
	jb_str(&jb, "method", ap->info.method);
	jb_str(&jb, "host", ap->info.host);
	jb_str(&jb, "path", ap->info.path);
	jb_str(&jb, "rule", ap->info.rule);
	jb_str(&jb, "body_sha256", sha);
	n = jb_finish(&jb, 0);
	if (n < 1) {
		free(buf);
		return -1;
	}
	/* the object without its "}", then "fields" (an array, [] when none), then "}" */
	evbuffer_add(out, buf, (size_t)n - 1);
	evbuffer_add(out, SLUICE_LIT(",\"fields\":["));
	for (i = 0; i < ap->info.nfields; i++) {
		jb_init(&jb, buf, cap);
		jb_str(&jb, "place", ap->fields[i].place);
		jb_str(&jb, "value", ap->fields[i].value);
		n = jb_finish(&jb, 0);
		if (n < 0)
			n = snprintf(buf, cap, "{\"place\":\"?\",\"value\":\"?\"}");
		if (i > 0)
			evbuffer_add(out, SLUICE_LIT(","));
		evbuffer_add(out, buf, (size_t)n);
	}
	evbuffer_add(out, SLUICE_LIT("]}"));
	free(buf);
	return 0;
}

void
approvals_each_pending(struct approvals *a, approvals_each_fn *fn, void *arg)
{
	struct approval *ap;
	uint64_t now = clock_mono_ms();

	pthread_mutex_lock(&a->mu);
	TAILQ_FOREACH(ap, &a->list, link)
		if (ap->state == AP_PENDING)
			fn(arg, ap->id, &ap->info, now - ap->added_ms, ap->deadline_ms > now ? ap->deadline_ms - now : 0);
	pthread_mutex_unlock(&a->mu);
}

size_t
approvals_list_entries(struct approvals *a, struct evbuffer *out)
{
	struct approval *ap;
	uint64_t now = clock_mono_ms();
	int first = 1;
	size_t n = 0;

	pthread_mutex_lock(&a->mu);
	TAILQ_FOREACH(ap, &a->list, link) {
		if (ap->state != AP_PENDING)
			continue;
		if (!first)
			evbuffer_add(out, SLUICE_LIT(","));
		if (entry_json(ap, now, out) != 0) {
			/* out of memory for one entry: still list its id, so it can be decided */
			evbuffer_add_printf(out, "{\"id\":\"%s\",\"error\":\"cannot format\"}", ap->id);
		}
		first = 0;
		n++;
	}
	pthread_mutex_unlock(&a->mu);
	return n;
}

void
approvals_list_json(struct approvals *a, struct evbuffer *out)
{
	evbuffer_add(out, SLUICE_LIT("["));
	approvals_list_entries(a, out);
	evbuffer_add(out, SLUICE_LIT("]\n"));
}
