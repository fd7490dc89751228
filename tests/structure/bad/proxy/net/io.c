/* good: net uses its own header and common */
#include "proxy/net/net.h"
#include "common/ok.h"
