/* BAD: session reaches into a private header of net */
#include "proxy/net/pool_int.h"
