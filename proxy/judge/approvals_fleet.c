/*
 * proxy/judge/approvals_fleet.c - this gateway's holds published to the
 * fleet and the fleet's decisions applied to them (approvals_fleet.h).
 */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/hex.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/judge/approvals_fleet.h"

struct approvals_fleet {
	struct approvals *a;
	struct fleet *f;
	struct event *sync_ev;            /* activated by the watch hook; also every FLEET_TICK_MS */
	char gw[FLEET_GW_MAX + 1];
	approval_note_fn note;
	void *note_arg;
};

/* Any thread, under the registry's mutex: only wakes the main thread. */
static void
on_watch(void *arg)
{
	struct approvals_fleet *af = arg;

	event_active(af->sync_ev, EV_TIMEOUT, 0);
}

/* Under the registry's mutex (approvals_each_pending): one pending hold to the fleet. */
static void
sync_one(void *arg, const char *id, const struct approval_info *info, uint64_t age_ms, uint64_t left_ms)
{
	struct approvals_fleet *af = arg;
	struct fleet_hold h;
	int64_t now = (int64_t)clock_wall_ms();

	memset(&h, 0, sizeof(h));
	memcpy(h.id, id, FLEET_ID_LEN + 1);
	memcpy(h.gw, af->gw, sizeof(h.gw));
	h.sandbox = info->sandbox;
	h.rule = info->rule;
	h.method = info->method;
	h.host = info->host;
	h.path = info->path;
	h.fields = info->fields;
	h.nfields = info->nfields;
	hex_encode(h.body_sha256, info->body_sha256, 32);
	h.created_ms = now - (int64_t)age_ms;
	h.expiry_ms = now + (int64_t)left_ms;
	fleet_sync_hold(af->f, &h);
}

static void
on_sync(evutil_socket_t fd, short what, void *arg)
{
	struct approvals_fleet *af = arg;

	(void)fd;
	(void)what;
	fleet_sync_begin(af->f);
	approvals_each_pending(af->a, sync_one, af);
	fleet_sync_end(af->f);
}

/* A decision from another gateway for one of ours (verified by the fleet client). */
static void
on_decision(void *arg, const char *id, int approve, const char *by)
{
	struct approvals_fleet *af = arg;

	if (approvals_decide(af->a, id, approve, by) != 0)
		log_info("fleet: a decision for %s came after it was decided here: ignored", id);
}

/* A decision of ours for another gateway's hold was taken: its `approval` record here. */
static void
on_decided(void *arg, const struct fleet_hold *h, int approve, const char *by)
{
	struct approvals_fleet *af = arg;
	struct approval_info info;
	size_t i;

	memset(&info, 0, sizeof(info));
	info.sandbox = h->sandbox;
	info.method = h->method;
	info.host = h->host;
	info.path = h->path;
	info.rule = h->rule;
	info.fields = h->fields;
	info.nfields = h->nfields;
	info.gateway = h->gw;
	for (i = 0; i < 32; i++)
		info.body_sha256[i] = (uint8_t)(sluice_hexval(h->body_sha256[2 * i]) << 4 | sluice_hexval(h->body_sha256[2 * i + 1]));
	af->note(af->note_arg, h->id, &info, approve ? APPROVAL_APPROVED : APPROVAL_REJECTED, by);
}

struct approvals_fleet *
approvals_fleet_start(struct approvals *a, struct event_base *base, const struct store_opts *so,
                      const char *gateway_id, const struct secret_buf *key, approval_note_fn note, void *note_arg,
                      const char **err)
{
	struct approvals_fleet *af = xcalloc(1, sizeof(*af));
	struct timeval tv = {0, FLEET_TICK_MS * 1000};

	af->a = a;
	af->note = note;
	af->note_arg = note_arg;
	snprintf(af->gw, sizeof(af->gw), "%s", gateway_id);
	af->f = fleet_create(base, so, gateway_id, key, on_decision, on_decided, af, err);
	if (af->f == NULL) {
		free(af);
		return NULL;
	}
	af->sync_ev = event_new(base, -1, EV_PERSIST, on_sync, af);
	if (af->sync_ev == NULL || event_add(af->sync_ev, &tv) != 0)
		fatalx("approvals: out of memory");
	approvals_set_watch(a, on_watch, af);
	return af;
}

void
approvals_fleet_stop(struct approvals_fleet *af)
{
	if (af == NULL)
		return;
	approvals_set_watch(af->a, NULL, NULL);   /* under the mutex: no activation after this */
	event_free(af->sync_ev);
	fleet_destroy(af->f);
	free(af);
}

void
approvals_fleet_list_json(struct approvals_fleet *af, struct evbuffer *out)
{
	size_t n;

	evbuffer_add(out, SLUICE_LIT("["));
	n = approvals_list_entries(af->a, out);
	fleet_list_json(af->f, out, n == 0);
	evbuffer_add(out, SLUICE_LIT("]\n"));
}

enum fleet_decide_res
approvals_fleet_decide(struct approvals_fleet *af, const char *id, int approve, const char *by,
                       fleet_decide_done *done, void *done_arg)
{
	return fleet_decide(af->f, id, approve, by, done, done_arg);
}
