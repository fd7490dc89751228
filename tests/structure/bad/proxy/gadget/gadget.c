/* BAD: a module without a declared layer */
#include "common/ok.h"
