/* net and dns, one layer: dns may use net ... */
#include "proxy/dns/dns.h"
#include "proxy/net/net.h"
