/* proxy/session/session.h */
#include "proxy/net/net.h"
