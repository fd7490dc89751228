/* The key tables doc-check reads (a stand-in for the loader's policy/*.c): "documented" is in the man page and
 * a guide; "undocumented" is in neither (BAD); "manonly" has a man entry but no guide names it (BAD). */
static const char *const keys[] = {"documented", "undocumented", "manonly"};
