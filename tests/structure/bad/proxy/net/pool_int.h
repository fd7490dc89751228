/* proxy/net/pool_int.h: private to net */
