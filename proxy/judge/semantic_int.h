/*
 * proxy/judge/semantic_int.h - the per-request state of the semantic rules, shared
 * by semantic.c (body, decision, holds, audit) and semlimits.c (limits).
 */
#ifndef SLUICE_PROXY_SEMANTIC_INT_H
#define SLUICE_PROXY_SEMANTIC_INT_H

#include <stddef.h>
#include <stdint.h>
#include "policy/policy.h"
#include "proxy/judge/approvals.h"

enum sem_phase {
	SEM_P_NONE = 0,      /* nothing held for the decision: decided, or nothing to decide later */
	SEM_P_BODY = 1,      /* holding the body (or the git command section) a rule reads, to decide */
	SEM_P_HOLDBODY = 2,  /* a hold verdict: holding the whole body the approval binds */
	SEM_P_PARK = 3,      /* a hold verdict on a request without a body: to park (sem_park_start) */
	SEM_P_WAIT = 4,      /* parked: waiting for an operator */
};

struct sem_req {
	enum sem_phase phase;
	size_t need;                     /* SEM_P_BODY: bytes the rules read (their largest max_body) */
	unsigned flags;                  /* POLICY_NEED_GIT_SECTION: only the command section is read */
	size_t hold_max;                 /* a hold verdict: the body it binds, at most (the judge's hold_body_max) */
	size_t acct;                     /* held bytes counted in the gateway's (and the h2 connection's) total */
	size_t *conn_acct;               /* the HTTP/2 connection's total, NULL on a connection of its own */
	void *hblock;                    /* SEM_P_BODY: the head's fields, copied for the decision with the body */
	const struct policy_header *hdr;
	size_t nhdr;
	struct policy_decision *dec;     /* SEM_P_HOLDBODY, SEM_P_PARK: the hold decided before its body was whole */
	/* the decision */
	const char *rule;
	const struct policy_limit *limit;
	const struct policy_budget *budget;
	int64_t amount;
	struct policy_outcome report;
	unsigned char report_mode;       /* passed only because the host is in report mode */
	unsigned char reported;          /* <report> says what a report-mode rule (or enforcement) would have done */
	unsigned char admitted;          /* sem_admit ran (a resent request is not counted twice) */
	unsigned char budget_taken;      /* a budget was taken: its own (<own_taken>) or a batch element's (mcp_req.h) */
	unsigned char own_taken;         /* <budget> was taken */
	unsigned char budget_shared;     /* <budget> was taken in the shared counters (refund there, <window_s>) */
	unsigned lim_next;               /* sem_admit's next step (semlimits.c), kept while it waits */
	unsigned char fallback;          /* on_error: local: a limit was counted by this gateway alone */
	struct store_op *store_op;       /* the operation sem_admit waits for, NULL when none */
	uint64_t window_s;               /* <budget_shared>: the window the store took it from */
	unsigned char sent;              /* the first byte went upstream: the budget is spent */
	unsigned char parked;            /* <hold_id> is pending in the approvals registry */
	size_t git_section;              /* a push's command section decided on: its length, for the session to keep */
	/* a refusal by a limit */
	const char *limit_key;
	const char *limit_kind;
	unsigned retry_after;
	char reset[32];
	char amount_text[32];
	/* a hold */
	char hold_id[APPROVALS_ID_LEN + 1];
	const char *hold_outcome;
	char hold_by[APPROVALS_BY_MAX];
};

struct req;
struct conn;
struct store_op;
/* r->sem, made on first use. */
struct sem_req *sem_req_of(struct req *r);
/* Gives back every budget the request took (it never went upstream, or a later take refused it). */
void sem_budget_refund(struct conn *c);

#endif
