/* proxy/core/refusal.c - a refusal as a value (refusal.h): filling one, and its error's text */
#include "proxy/core/refusal.h"

const char *
refusal_err_text(enum refusal_err e)
{
	switch (e) {
	case REFUSAL_BAD_REQUEST: return "bad request";
	case REFUSAL_DENIED: return "denied by policy";
	case REFUSAL_EXFILTRATION: return "exfiltration attempt";
	case REFUSAL_SECRET_UNAVAILABLE: return "secret unavailable";
	case REFUSAL_SECRET_REVOKED: return "secret revoked";
	case REFUSAL_INTERNAL: return "internal error";
	case REFUSAL_MEDIA_TYPE: return "unsupported media type";
	case REFUSAL_TOO_LARGE: return "request too large";
	case REFUSAL_RATE_LIMITED: return "rate limited";
	case REFUSAL_LIMITS_UNAVAILABLE: return "limits unavailable";
	case REFUSAL_AUDIT_UNAVAILABLE: return "audit log unavailable";
	case REFUSAL_UPSTREAM_FAILED: return "upstream failed";
	case REFUSAL_MISDIRECTED: return "misdirected request";
	case REFUSAL_METHOD_NOT_ALLOWED: return "method not allowed";
	case REFUSAL_TIMEOUT: return "request timeout";
	case REFUSAL_PROXY_AUTH: return "proxy authentication failed";
	case REFUSAL_GATEWAY_BUSY: return "gateway busy";
	case REFUSAL_APPROVAL_UNAVAILABLE: return "approval unavailable";
	case REFUSAL_GATEWAY_STOPPING: return "gateway stopping";
	}
	return "refused";
}

int
refusal_http_status(const struct refusal *rf)
{
	const struct refusal_jsonrpc *j = rf->jsonrpc;

	return j != NULL && j->nids > 0 && (rf->status == 403 || rf->status == 429) ? 200 : rf->status;
}

int
refusal_set(struct refusal *rf, int status, enum refusal_err err, const char *rule, const char *reason)
{
	*rf = (struct refusal){.status = status, .err = err, .rule = rule, .reason = reason};
	return -1;
}

int
refusal_close(struct refusal *rf, int status, enum refusal_err err, const char *rule, const char *reason)
{
	refusal_set(rf, status, err, rule, reason);
	rf->close = 1;
	return -1;
}
