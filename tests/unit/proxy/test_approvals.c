/*
 * tests/unit/proxy/test_approvals.c - proxy/judge/approvals.c: parking, listing,
 * approving, rejecting, timing out, cancelling, shutting down and freeing;
 * ids (16 lower-case hex, unique); the max_pending bound; argument checks;
 * the note hook's outcomes; the listing's escaping; and a decision racing a
 * cancel (and a timeout) between two threads, many times: no callback after
 * a cancel, at most one callback ever, nothing leaked (ASan/LSan).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <jansson.h>

#include "common/sluice.h"
#include "proxy/judge/approvals.h"

struct seen {
	int calls;
	int decision;
	char by[APPROVALS_BY_MAX];
};

static void
on_decided(void *arg, int decision, const char *by)
{
	struct seen *s = arg;

	s->calls++;
	s->decision = decision;
	snprintf(s->by, sizeof(s->by), "%s", by);
}

static const struct policy_field demo_fields[] = {
	{"form:amount", "5000"},
	{"form:currency", "usd"},
};

static struct approval_info
demo_info(void)
{
	struct approval_info in = {
		.sandbox = "sb-one",
		.method = "POST",
		.host = "api.stripe.com",
		.path = "/v1/refunds",
		.rule = "refunds",
		.fields = demo_fields,
		.nfields = 2,
	};

	memset(in.body_sha256, 0xab, sizeof(in.body_sha256));
	return in;
}

/* Runs <base> until nothing is left or <ms> pass. */
static void
run_for(struct event_base *base, unsigned ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static json_t *
list(struct approvals *a)
{
	struct evbuffer *b = evbuffer_new();
	json_t *j;

	approvals_list_json(a, b);
	j = json_loadb((const char *)evbuffer_pullup(b, -1), evbuffer_get_length(b), 0, NULL);
	evbuffer_free(b);
	assert_non_null(j);
	assert_true(json_is_array(j));
	return j;
}

static void
test_add_list_approve(void **state)
{
	struct event_base *base = event_base_new();
	struct approvals *a = approvals_new(APPROVALS_MAX_PENDING);
	struct approval_info in = demo_info();
	struct seen s = {0};
	char id[17];
	json_t *j, *o, *f;

	(void)state;
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, id), 0);
	assert_true(approvals_id_valid(id));
	assert_int_equal(approvals_pending(a), 1);
	j = list(a);
	assert_int_equal(json_array_size(j), 1);
	o = json_array_get(j, 0);
	assert_string_equal(json_string_value(json_object_get(o, "id")), id);
	assert_string_equal(json_string_value(json_object_get(o, "sandbox")), "sb-one");
	assert_string_equal(json_string_value(json_object_get(o, "method")), "POST");
	assert_string_equal(json_string_value(json_object_get(o, "host")), "api.stripe.com");
	assert_string_equal(json_string_value(json_object_get(o, "path")), "/v1/refunds");
	assert_string_equal(json_string_value(json_object_get(o, "rule")), "refunds");
	assert_string_equal(json_string_value(json_object_get(o, "body_sha256")),
	                    "abababababababababababababababababababababababababababababababab");
	assert_true(json_integer_value(json_object_get(o, "age_ms")) >= 0);
	assert_true(json_integer_value(json_object_get(o, "timeout_left_ms")) > 59000);
	assert_true(json_integer_value(json_object_get(o, "timeout_left_ms")) <= 60000);
	f = json_object_get(o, "fields");
	assert_int_equal(json_array_size(f), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(f, 0), "place")), "form:amount");
	assert_string_equal(json_string_value(json_object_get(json_array_get(f, 0), "value")), "5000");
	assert_string_equal(json_string_value(json_object_get(json_array_get(f, 1), "value")), "usd");
	json_decref(j);

	/* nothing runs until decided */
	run_for(base, 20);
	assert_int_equal(s.calls, 0);
	assert_int_equal(approvals_decide(a, id, 1, "uid:0(root)"), 0);
	assert_int_equal(approvals_pending(a), 0);
	j = list(a);
	assert_int_equal(json_array_size(j), 0);   /* decided: no longer listed, even before its callback ran */
	json_decref(j);
	assert_int_equal(approvals_decide(a, id, 0, "uid:0(root)"), SLUICE_ENOENT);  /* already decided */
	assert_int_equal(s.calls, 0);              /* the callback runs on the base's thread, not in decide */
	run_for(base, 20);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.decision, 1);
	assert_string_equal(s.by, "uid:0(root)");
	assert_int_equal(approvals_decide(a, id, 1, "uid:0(root)"), SLUICE_ENOENT);
	approvals_cancel(a, id);                   /* after the callback: nothing happens */
	run_for(base, 10);
	assert_int_equal(s.calls, 1);
	approvals_free(a);
	event_base_free(base);
}

static void
test_reject_and_unknown(void **state)
{
	struct event_base *base = event_base_new();
	struct approvals *a = approvals_new(8);
	struct approval_info in = demo_info();
	struct seen s1 = {0}, s2 = {0};
	char id1[17], id2[17];

	(void)state;
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s1, id1), 0);
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s2, id2), 0);
	assert_string_not_equal(id1, id2);
	assert_int_equal(approvals_decide(a, "0000000000000000", 1, "x"), SLUICE_ENOENT);
	assert_int_equal(approvals_decide(a, "short", 1, "x"), SLUICE_ENOENT);
	assert_int_equal(approvals_decide(a, "ABCDEF0123456789", 1, "x"), SLUICE_ENOENT);  /* upper case is not an id */
	assert_int_equal(approvals_decide(a, id1, 2, "x"), SLUICE_EINVAL);
	assert_int_equal(approvals_decide(a, id1, 1, NULL), SLUICE_EINVAL);
	assert_int_equal(approvals_decide(a, id2, 0, "uid:1000(op)"), 0);
	run_for(base, 20);
	assert_int_equal(s1.calls, 0);
	assert_int_equal(s2.calls, 1);
	assert_int_equal(s2.decision, 0);
	assert_string_equal(s2.by, "uid:1000(op)");
	assert_int_equal(approvals_pending(a), 1);
	approvals_cancel(a, id1);
	run_for(base, 20);
	assert_int_equal(s1.calls, 0);
	approvals_free(a);
	event_base_free(base);
}

static void
test_timeout(void **state)
{
	struct event_base *base = event_base_new();
	struct approvals *a = approvals_new(8);
	struct approval_info in = demo_info();
	struct seen s = {0}, z = {0};
	char id[17], idz[17];

	(void)state;
	assert_int_equal(approvals_add(a, &in, 50, base, on_decided, &s, id), 0);
	assert_int_equal(approvals_add(a, &in, 0, base, on_decided, &z, idz), 0);
	run_for(base, 10);
	assert_int_equal(z.calls, 1);              /* timeout 0: at the next loop */
	assert_int_equal(z.decision, -1);
	assert_int_equal(s.calls, 0);
	run_for(base, 200);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.decision, -1);
	assert_string_equal(s.by, "timeout");
	assert_int_equal(approvals_decide(a, id, 1, "late"), SLUICE_ENOENT);
	assert_int_equal(approvals_pending(a), 0);
	approvals_free(a);
	event_base_free(base);
}

static void
test_cancel(void **state)
{
	struct event_base *base = event_base_new();
	struct approvals *a = approvals_new(8);
	struct approval_info in = demo_info();
	struct seen s = {0};
	char id[17];
	json_t *j;

	(void)state;
	/* pending, then cancelled: no callback, no timeout later */
	assert_int_equal(approvals_add(a, &in, 30, base, on_decided, &s, id), 0);
	approvals_cancel(a, id);
	assert_int_equal(approvals_pending(a), 0);
	j = list(a);
	assert_int_equal(json_array_size(j), 0);
	json_decref(j);
	assert_int_equal(approvals_decide(a, id, 1, "x"), SLUICE_ENOENT);
	run_for(base, 100);
	assert_int_equal(s.calls, 0);

	/* decided (its event active), then cancelled before the loop ran it: no callback */
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, id), 0);
	assert_int_equal(approvals_decide(a, id, 1, "x"), 0);
	approvals_cancel(a, id);
	run_for(base, 50);
	assert_int_equal(s.calls, 0);
	approvals_cancel(a, id);                   /* twice: nothing */
	approvals_cancel(a, "not-an-id");
	approvals_cancel(a, NULL);
	approvals_free(a);
	event_base_free(base);
}

static void
test_free_and_shutdown(void **state)
{
	struct event_base *base = event_base_new();
	struct approvals *a = approvals_new(8);
	struct approval_info in = demo_info();
	struct seen s1 = {0}, s2 = {0}, s3 = {0};
	char id1[17], id2[17], id3[17];

	(void)state;
	/* shutdown: pending ones get -2, then nothing more is taken */
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s1, id1), 0);
	approvals_shutdown(a);
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s2, id2), SLUICE_ECLOSED);
	assert_int_equal(id2[0], '\0');
	assert_int_equal(approvals_decide(a, id1, 1, "x"), SLUICE_ENOENT);
	run_for(base, 20);
	assert_int_equal(s1.calls, 1);
	assert_int_equal(s1.decision, -2);
	assert_string_equal(s1.by, "shutdown");
	approvals_shutdown(a);                     /* idempotent */
	approvals_free(a);

	/* free with pending ones: each gets -2 on its base afterwards; the registry goes with the last */
	a = approvals_new(8);
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s2, id2), 0);
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s3, id3), 0);
	approvals_free(a);
	assert_int_equal(s2.calls + s3.calls, 0);
	run_for(base, 20);
	assert_int_equal(s2.calls, 1);
	assert_int_equal(s2.decision, -2);
	assert_int_equal(s3.calls, 1);
	assert_int_equal(s3.decision, -2);
	approvals_free(NULL);
	event_base_free(base);
}

static void
test_ids_and_bound(void **state)
{
	enum { N = APPROVALS_MAX_PENDING };
	struct event_base *base = event_base_new();
	struct approvals *a = approvals_new(N);
	struct approval_info in = demo_info();
	static char ids[N][17];
	struct seen s = {0};
	char extra[17];
	size_t i, k;
	json_t *j;

	(void)state;
	for (i = 0; i < N; i++) {
		assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, ids[i]), 0);
		assert_int_equal(strlen(ids[i]), 16);
		assert_true(approvals_id_valid(ids[i]));
		assert_int_equal(strspn(ids[i], "0123456789abcdef"), 16);
	}
	for (i = 0; i < N; i++)
		for (k = i + 1; k < N; k++)
			assert_string_not_equal(ids[i], ids[k]);
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, extra), SLUICE_ETOOBIG);
	j = list(a);
	assert_int_equal(json_array_size(j), N);
	assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "id")), ids[0]);  /* oldest first */
	json_decref(j);
	/* a decided one still counts until its callback ran: the bound is on live approvals */
	assert_int_equal(approvals_decide(a, ids[0], 0, "x"), 0);
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, extra), SLUICE_ETOOBIG);
	run_for(base, 10);
	assert_int_equal(s.calls, 1);
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, extra), 0);
	for (i = 1; i < N; i++)
		approvals_cancel(a, ids[i]);
	approvals_cancel(a, extra);
	assert_int_equal(approvals_pending(a), 0);
	approvals_free(a);
	event_base_free(base);
}

static void
test_bad_arguments(void **state)
{
	struct event_base *base = event_base_new();
	struct approvals *a = approvals_new(8);
	struct approval_info in = demo_info();
	struct seen s = {0};
	char id[17];

	(void)state;
	in.method = NULL;
	assert_int_equal(approvals_add(a, &in, 100, base, on_decided, &s, id), SLUICE_EINVAL);
	in = demo_info();
	in.host = NULL;
	assert_int_equal(approvals_add(a, &in, 100, base, on_decided, &s, id), SLUICE_EINVAL);
	in = demo_info();
	in.path = NULL;
	assert_int_equal(approvals_add(a, &in, 100, base, on_decided, &s, id), SLUICE_EINVAL);
	in = demo_info();
	in.nfields = POLICY_FIELDS_MAX + 1;
	assert_int_equal(approvals_add(a, &in, 100, base, on_decided, &s, id), SLUICE_EINVAL);
	in = demo_info();
	assert_int_equal(approvals_add(a, &in, 100, NULL, on_decided, &s, id), SLUICE_EINVAL);
	assert_int_equal(approvals_add(a, &in, 100, base, NULL, &s, id), SLUICE_EINVAL);
	assert_int_equal(approvals_add(a, NULL, 100, base, on_decided, &s, id), SLUICE_EINVAL);
	/* sandbox and rule may be missing: omitted from the listing */
	in.sandbox = NULL;
	in.rule = NULL;
	in.nfields = 0;
	in.fields = NULL;
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, id), 0);
	{
		json_t *j = list(a), *o = json_array_get(j, 0);

		assert_null(json_object_get(o, "sandbox"));
		assert_null(json_object_get(o, "rule"));
		assert_int_equal(json_array_size(json_object_get(o, "fields")), 0);
		assert_true(json_is_array(json_object_get(o, "fields")));
		json_decref(j);
	}
	approvals_cancel(a, id);
	assert_false(approvals_id_valid("0123456789abcde"));
	assert_false(approvals_id_valid("0123456789abcdef0"));
	assert_false(approvals_id_valid("0123456789abcdeg"));
	assert_true(approvals_id_valid("0123456789abcdef"));
	assert_string_equal(approvals_decision_name(1), "approved");
	assert_string_equal(approvals_decision_name(0), "rejected");
	assert_string_equal(approvals_decision_name(-1), "timeout");
	assert_string_equal(approvals_decision_name(-2), "shutdown");
	assert_string_equal(approvals_decision_name(APPROVAL_CANCELLED), "cancelled");
	assert_string_equal(approvals_decision_name(7), "?");
	assert_int_equal(s.calls, 0);
	approvals_free(a);
	event_base_free(base);
}

/* The listing escapes what a peer chose: quotes, backslashes, control bytes and high bytes. */
static void
test_listing_escapes(void **state)
{
	struct event_base *base = event_base_new();
	struct approvals *a = approvals_new(8);
	struct approval_info in = demo_info();
	static const struct policy_field evil[] = {{"json:$.note", "a\"b\\c\n\x1b[31mred\x7f\xff"}};
	struct evbuffer *b = evbuffer_new();
	struct seen s = {0};
	char id[17], *text;
	size_t len, i;
	json_t *j, *o;

	(void)state;
	in.path = "/v1/\"},{\"id\":\"forged\x1b]0;t\x07";
	in.fields = evil;
	in.nfields = 1;
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, id), 0);
	approvals_list_json(a, b);
	len = evbuffer_get_length(b);
	text = (char *)evbuffer_pullup(b, -1);
	for (i = 0; i + 1 < len; i++)   /* the last byte is the newline */
		assert_true((unsigned char)text[i] >= 0x20 && (unsigned char)text[i] < 0x7f);
	j = json_loadb(text, len, 0, NULL);
	assert_non_null(j);
	assert_int_equal(json_array_size(j), 1);
	o = json_array_get(j, 0);
	assert_string_equal(json_string_value(json_object_get(o, "id")), id);
	/* \u00XX escapes decode to code points: the quote and the ESC are back, as data */
	assert_string_equal(json_string_value(json_object_get(o, "path")), "/v1/\"},{\"id\":\"forged\x1b]0;t\x07");
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(o, "fields"), 0), "value")),
	                    "a\"b\\c\n\x1b[31mred\x7f\xc3\xbf");
	json_decref(j);
	evbuffer_free(b);
	approvals_cancel(a, id);
	approvals_free(a);
	event_base_free(base);
}

struct noted {
	int n;
	char log[512];
};

static void
on_note(void *arg, const char *id, const struct approval_info *info, int decision, const char *by)
{
	struct noted *nt = arg;
	size_t len = strlen(nt->log);

	assert_true(approvals_id_valid(id));
	snprintf(nt->log + len, sizeof(nt->log) - len, "%s:%s:%s;", approvals_decision_name(decision), by, info->rule);
	nt->n++;
}

static void
test_note_hook(void **state)
{
	struct event_base *base = event_base_new();
	struct approvals *a = approvals_new(8);
	struct approval_info in = demo_info();
	struct noted nt = {0};
	struct seen s = {0};
	char id[17];

	(void)state;
	approvals_set_note(a, on_note, &nt);
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, id), 0);
	assert_int_equal(approvals_decide(a, id, 1, "uid:0(root)"), 0);
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, id), 0);
	assert_int_equal(approvals_decide(a, id, 0, "uid:7(op)"), 0);
	assert_int_equal(approvals_add(a, &in, 0, base, on_decided, &s, id), 0);
	run_for(base, 20);
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, id), 0);
	approvals_cancel(a, id);
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, id), 0);
	assert_int_equal(approvals_decide(a, id, 1, "uid:0(root)"), 0);
	approvals_cancel(a, id);                   /* decided already: noted once, as approved */
	assert_int_equal(approvals_add(a, &in, 60000, base, on_decided, &s, id), 0);
	approvals_free(a);
	run_for(base, 20);
	assert_string_equal(nt.log, "approved:uid:0(root):refunds;rejected:uid:7(op):refunds;timeout:timeout:refunds;"
	                            "cancelled:client:refunds;approved:uid:0(root):refunds;shutdown:shutdown:refunds;");
	assert_int_equal(s.calls, 4);
	event_base_free(base);
}

/* ---- a decision racing a cancel (and timeouts), two threads ---- */

#define RACE_ROUNDS 20000

struct race {
	struct approvals *a;
	struct event_base *base;
	char id[17];
	atomic_int published;      /* round whose id is in <id> */
	atomic_int taken;          /* round whose id the deciding thread has read */
	atomic_int acked;          /* round the deciding thread is done with */
	atomic_int decided_ok;
	atomic_int bad_rc;
	int calls;                 /* callbacks of the current round (worker thread only) */
	int late_calls;            /* callbacks after a cancel: must stay 0 */
	int double_calls;          /* rounds with more than one callback: must stay 0 */
	int callbacks_total;
};

static void
race_cb(void *arg, int decision, const char *by)
{
	struct race *r = arg;

	(void)decision;
	(void)by;
	r->calls++;
}

static void
spin(unsigned n)
{
	volatile unsigned x = 0;

	while (n-- > 0)
		x++;
}

static void *
race_decider(void *arg)
{
	struct race *r = arg;
	unsigned seed = 12345;
	char id[17];
	int round, rc;

	for (round = 1; round <= RACE_ROUNDS; round++) {
		while (atomic_load(&r->published) != round)
			sched_yield();
		memcpy(id, r->id, sizeof(id));
		atomic_store(&r->taken, round);
		spin(rand_r(&seed) % 4000);   /* longer than the canceller's on average: either side may win */
		rc = approvals_decide(r->a, id, (int)(rand_r(&seed) & 1), "uid:0(race)");
		if (rc == 0)
			atomic_fetch_add(&r->decided_ok, 1);
		else if (rc != SLUICE_ENOENT)
			atomic_fetch_add(&r->bad_rc, 1);   /* asserted on the main thread: cmocka is not thread-safe */
		atomic_store(&r->acked, round);
	}
	return NULL;
}

static void
test_race_decide_cancel(void **state)
{
	struct race r = {0};
	struct approval_info in = demo_info();
	pthread_t th;
	unsigned seed = 777;
	int round, before;

	(void)state;
	r.a = approvals_new(16);
	r.base = event_base_new();
	assert_int_equal(pthread_create(&th, NULL, race_decider, &r), 0);
	for (round = 1; round <= RACE_ROUNDS; round++) {
		unsigned mode = (unsigned)round % 4;
		char id[17];

		r.calls = 0;
		/* mode 3: a timeout due at once, so a timeout and a decision meet in the event */
		assert_int_equal(approvals_add(r.a, &in, mode == 3 ? 0 : 60000, r.base, race_cb, &r, id), 0);
		memcpy(r.id, id, sizeof(id));
		atomic_store(&r.published, round);
		while (atomic_load(&r.taken) != round)  /* both sides start from here: the race is close */
			sched_yield();
		spin(rand_r(&seed) % 400);
		if (mode >= 2)
			event_base_loop(r.base, EVLOOP_NONBLOCK);   /* the callback may run now: legitimately */
		before = r.calls;
		approvals_cancel(r.a, id);
		event_base_loop(r.base, EVLOOP_NONBLOCK);
		while (atomic_load(&r.acked) != round)
			sched_yield();
		event_base_loop(r.base, EVLOOP_NONBLOCK);       /* anything the decision could still have queued */
		if (r.calls != before)
			r.late_calls++;
		if (r.calls > 1)
			r.double_calls++;
		r.callbacks_total += r.calls;
	}
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&r.bad_rc), 0);
	assert_int_equal(r.late_calls, 0);
	assert_int_equal(r.double_calls, 0);
	assert_int_equal(approvals_pending(r.a), 0);
	/* decisions were taken (the share that beat the cancel depends on scheduling), and callbacks ran */
	assert_true(atomic_load(&r.decided_ok) > 0);
	assert_true(r.callbacks_total > 0);
	print_message("race: %d decisions accepted, %d callbacks ran, over %d rounds\n", atomic_load(&r.decided_ok),
	              r.callbacks_total, RACE_ROUNDS);
	approvals_free(r.a);
	event_base_free(r.base);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_list_approve),
		cmocka_unit_test(test_reject_and_unknown),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_free_and_shutdown),
		cmocka_unit_test(test_ids_and_bound),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_listing_escapes),
		cmocka_unit_test(test_note_hook),
		cmocka_unit_test(test_race_decide_cancel),
	};

	evthread_use_pthreads();  /* decisions make a worker's event active from another thread, as in the gateway */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
