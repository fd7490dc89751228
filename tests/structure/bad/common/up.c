/* BAD: common calls up into policy */
#include "common/ok.h"
#include "policy/p.h"
