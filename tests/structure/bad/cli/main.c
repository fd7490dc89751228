/* good: cli is the top */
#include "proxy/session/session.h"
#include "policy/p.h"
