/*
 * cli/cli.h - helpers shared by the subcommands of `sluice`.
 */
#ifndef SLUICE_CLI_CLI_H
#define SLUICE_CLI_CLI_H

#include <stddef.h>
#include <stdint.h>
#include "policy/policy.h"
#include "secrets/secrets.h"

/*
 * The placeholder sandboxes hold for secret <s>: its `placeholder:` as
 * written, else the one derived from <key> (the placeholder key of the CA
 * directory, secret_key_load; NULL when it could not be loaded).  Writes it
 * into <out> (<cap> >= SECRET_PLACEHOLDER_MAX) and sets *<derived> (1 when
 * derived).  Returns 0, or a negative SLUICE_E* when it cannot be derived
 * (no key, an unknown format).  `secrets list` and `run` share it, so what
 * the list shows is what a sandbox gets.
 */
int cli_placeholder(const struct policy_secret *s, const uint8_t *key, char *out, size_t cap, int *derived);

/* 1 when one of argv[1..argc-1] is --help or -h (cli/placeholder.c). */
int cli_wants_help(int argc, char **argv);

/* `sluice run` (cli/run.c). */
int cmd_run(int argc, char **argv);
/*
 * run_refusals.c: prints to stderr what the gateway refused for sandbox <sandbox> (its audit records in
 * <audit_path> since <since_ms>, wall-clock milliseconds): names not in the policy, refused requests and
 * connections, at most 10 distinct lines; nothing when there are none.  <status>: the command's exit status.
 */
void run_refusals_print(const char *audit_path, const char *sandbox, int64_t since_ms, int status);

/* `sluice sandboxes` (cli/sandboxes.c). */
int cmd_sandboxes(int argc, char **argv);

/* `sluice approvals list|approve|reject` (cli/approvals.c). */
int cmd_approvals(int argc, char **argv);

/* `sluice audit verify|query|tail|summary|keygen` (cli/audit.c). */
int cmd_audit(int argc, char **argv);

#endif
