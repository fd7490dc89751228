/* good: net includes its own private header */
#include "proxy/net/pool_int.h"
