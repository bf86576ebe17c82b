/*
 * main.c — the quiver command-line tool: argument dispatch to subcommands.
 * Top layer; uses the public library API only.
 */
#include <stdio.h>
#include <string.h>

#include "quiver/core.h"

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
    printf("quiver %s\n", qv_version());
    return 0;
  }
  fprintf(stderr, "usage: quiver COMMAND [ARGS]\n");
  return 2;
}
