/*
 * tests/unit/proxy/sessfake.h - the session above the cred/ and judge/ modules
 * in their unit tests (sessfake.c): http_answer records the refusal in
 * fake_ans instead of writing it and freeing the request (the refusals
 * redesign makes that a returned refusal), conn_peer_str gives a fixed
 * sandbox address.  Every answer these modules give must be audited: a call
 * with <audit> 0 fails the test.
 */
#ifndef SLUICE_TESTS_SESSFAKE_H
#define SLUICE_TESTS_SESSFAKE_H

struct fake_answer {
	int n;              /* answers written since fake_answer_reset (one at most, or the code answered twice) */
	int status;
	char error[64];
	char rule[64];
	char reason[512];
};
extern struct fake_answer fake_ans;

void fake_answer_reset(void);

struct policy_config;
struct policy;
/* Loads the policy <yaml> (NUL-terminated) as the gateway would: 0, or -1 with the loader's error on stderr. */
int fake_policy(const char *yaml, struct policy_config **cfg, struct policy **pol);

#endif
