/* BAD: ... but not both ways (a cycle) */
#include "proxy/judge/judge.h"
#include "proxy/cred/cred.h"
