/* policy/p.h */
#include "common/ok.h"
