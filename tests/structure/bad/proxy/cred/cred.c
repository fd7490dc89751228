/* cred and judge, one layer: cred may use judge ... */
#include "proxy/cred/cred.h"
#include "proxy/judge/judge.h"
