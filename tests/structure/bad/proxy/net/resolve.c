/* BAD: ... but not both ways (a cycle) */
#include "proxy/net/net.h"
#include "proxy/dns/dns.h"
