/*
 * proxy/session/hold.c - a request whose body is held before the dial
 * (CONN_S_HOLD): for the placeholder search and injection of proxy/cred/ (a
 * body toward a host secrets are bound to), for a semantic rule that reads
 * it, or for an operator's approval (proxy/judge/).  Those modules decide and
 * prepare the bytes; here the session reads the body, keeps what a refusal in
 * the client's protocol needs, and then dials, answers or closes: the steps
 * of enum hold_step (proxy/core/conn.h).
 */
#include <event2/buffer.h>
#include "common/sluice.h"
#include "proxy/session/session.h"
#include "proxy/judge/semantic.h"
#include "proxy/core/context.h"

void
hold_start(struct conn *c)
{
	conn_set_state(c, CONN_S_HOLD);
	if (c->req->cred->expect_continue)  /* the body is wanted now: the upstream's own 100 would come too late */
		evbuffer_add(cio_out(c), SLUICE_LIT("HTTP/1.1 100 Continue\r\n\r\n"));
	conn_arm_timer(c, conn_limits(c)->body_ms);
}

/* A held body is not whole yet: -1 (400 in <rf>) if the client closed, else 0: wait (the timer rearmed on <progress>). */
static int
hold_wait(struct conn *c, int progress, struct refusal *rf)
{
	if (c->client_eof && evbuffer_get_length(cio_in(c)) == 0)
		return refusal_close(rf, 400, REFUSAL_BAD_REQUEST, "http", "client closed inside the request body");
	if (progress)
		conn_arm_timer(c, conn_limits(c)->body_ms);
	cio_read(c, 1);
	return 0;
}

/* A body held only for cred/ (no semantic rule reads it): read until whole, or until too large to hold. */
static int
cred_pump(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;
	size_t max = cred_hold_max(r);
	int p, progress = 0;

	while (!r->body_done && evbuffer_get_length(r->hold) <= max) {
		if ((p = req_body_hold(c, cio_in(c), rf)) < 0)
			return HOLD_REFUSED;
		if (p == 0)
			break;
		progress = 1;
	}
	if (r->body_done)
		return HOLD_SEND_WHOLE;
	if (evbuffer_get_length(r->hold) > max)
		return HOLD_SEND_STREAM;  /* too large to hold: the head goes with the client's framing, the body streams */
	return progress ? HOLD_MORE_MOVED : HOLD_MORE;
}

/* Keeps the first <len> bytes of the held body for a refusal in git's protocol (a no-op for other requests). */
static void
keep_section(struct conn *c, size_t len)
{
	struct evbuffer *h = c->req->hold;
	size_t have = h != NULL ? evbuffer_get_length(h) : 0;

	if (len > have)
		len = have;
	if (len > REFUSE_GIT_SECTION_MAX)
		len = REFUSE_GIT_SECTION_MAX;
	if (len > 0)
		refuse_proto_keep_section(c, (const char *)evbuffer_pullup(h, (ev_ssize_t)len), len);
}

/* A send step: the held body made ready by cred/ (whole, or its start with the rest streaming), then the dial. */
static int
hold_send(struct conn *c, int step, struct refusal *rf)
{
	if (step == HOLD_SEND_WHOLE) {
		keep_section(c, REFUSE_GIT_SECTION_MAX);  /* a limit refusing a push at the dial names its refs */
		if (cred_body_finish(c, rf) != 0)
			return -1;
	} else if (step == HOLD_SEND_STREAM) {
		if (cred_body_stream(c, rf) != 0)
			return -1;
	}
	return relay_dial(c, rf);
}

int
hold_pump(struct conn *c, struct refusal *rf)
{
	int step = sem_pumps(c) ? sem_hold_pump(c, rf) : cred_pump(c, rf);
	size_t sec = sem_git_section(c);

	if (sec > 0)
		keep_section(c, sec);  /* the command section the judge read: names the refs if refused later */
	switch (step) {
	case HOLD_REFUSED:
		return -1;
	case HOLD_PARKED:
		return 0;
	case HOLD_MORE:
	case HOLD_MORE_MOVED:
		return hold_wait(c, step == HOLD_MORE_MOVED, rf);
	case HOLD_CLIENT_GONE:
		conn_close(c);
		return 0;
	default:
		return hold_send(c, step, rf);
	}
}

/* An operator decided (judge/semantic.c's approval callback, the outermost frame of its event). */
static void
resumed(struct conn *c, int step, struct refusal *rf)
{
	if (step == HOLD_REFUSED || hold_send(c, step, rf) != 0)
		http_refuse(c, rf);
	if (c->state != CONN_S_DEAD)
		conn_pump(c);
}

/* The shared counters answered a request parked at relay_dial (judge/semlimits.c; the store's event). */
static void
admitted(struct conn *c, struct refusal *rf)
{
	struct refusal dial_rf;

	if (c->state == CONN_S_DEAD)  /* closed while it waited: freed soon (a budget taken is refunded then) */
		return;
	if (rf != NULL)
		http_refuse(c, rf);
	else if (relay_dial(c, &dial_rf) != 0)
		http_refuse(c, &dial_rf);
	if (c->state != CONN_S_DEAD)
		conn_pump(c);
}

const struct sem_hooks session_sem_hooks = {
	.resumed = resumed,
	.admitted = admitted,
};
