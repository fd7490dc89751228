/* good: session uses net below it */
#include "proxy/session/session.h"
#include "proxy/net/net.h"
