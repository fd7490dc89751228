/* good: common includes nothing above it */
#include "common/ok.h"
