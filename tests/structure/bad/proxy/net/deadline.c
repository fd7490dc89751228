/* BAD: net reports to the session by calling it */
#include "proxy/net/net.h"
#include "proxy/session/session.h"
