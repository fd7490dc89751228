/* proxy/net/net.h */
