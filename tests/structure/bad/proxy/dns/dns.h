/* proxy/dns/dns.h */
