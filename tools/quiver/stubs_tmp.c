/* stubs_tmp.c — placeholders removed when head/get/integration land. */
#include "cli.h"
int cmd_head(int argc, char **argv) { (void)argc; (void)argv; return 2; }
int cmd_get(int argc, char **argv) { (void)argc; (void)argv; return 2; }
int cmd_integration(int argc, char **argv) { (void)argc; (void)argv; return 2; }
